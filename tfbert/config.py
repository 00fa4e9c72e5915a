"""`BertConfig`: the architecture hyperparameters of a BERT encoder."""

import dataclasses
import json
import os

from tfbert.utils.json_file import read_json

_ACTIVATIONS = ("gelu", "gelu_approximate", "relu")

# Spellings other codebases use for the activations above.
_ACTIVATION_ALIASES = {
    "gelu": "gelu",  # HF and Google BERT: exact erf form.
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
    "gelu_approximate": "gelu_approximate",
    "relu": "relu",
}


def hf_activation(hidden_act):
    """HF's name of a `BertConfig.hidden_act`."""
    return {"gelu_approximate": "gelu_new"}.get(hidden_act, hidden_act)


@dataclasses.dataclass
class BertConfig:
    """Hyperparameters of a BERT encoder. Defaults are BERT-base (uncased).

    The switches after `layer_norm_epsilon` describe the other encoder
    families on the same layers (see docs/zoo.md); their defaults are BERT.

    Attributes:
      vocab_size: number of WordPiece ids.
      hidden_size: width H of every hidden state.
      num_layers: number of transformer blocks.
      num_heads: attention heads per block; must divide `hidden_size`.
      intermediate_size: width of the feed-forward inner layer.
      hidden_act: `"gelu"` (exact erf form, as in Google's and HF's BERT),
        `"gelu_approximate"` (tanh form) or `"relu"`.
      hidden_dropout: dropout rate on embeddings and block outputs.
      attention_dropout: dropout rate on attention probabilities.
      max_position_embeddings: rows of the learned position table (RoBERTa:
        including the `position_offset` rows before the first position).
      type_vocab_size: number of segment ids; 0 for no segment embeddings
        (DistilBERT), when `input_type_ids` are accepted and ignored.
      initializer_range: stddev of the truncated-normal initializer.
      layer_norm_epsilon: LayerNorm epsilon (BERT uses 1e-12 everywhere).
      embedding_size: width of the embedding tables when they are factorized
        (ALBERT, ELECTRA): a dense layer projects them to `hidden_size`.
        None: the tables are `hidden_size` wide and there is no projection.
      position_offset: index of the first position's row (RoBERTa:
        padding_idx + 1 = 2).
      use_pooler: whether the encoder has the tanh pooler and returns
        `pooled_output`. Models that never read it (span labeling) should
        not build it: its variables would get no gradient.
      share_layers: one transformer block applied `num_layers` times (ALBERT's
        cross-layer parameter sharing).
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_epsilon: float = 1e-12
    embedding_size: int | None = None
    position_offset: int = 0
    use_pooler: bool = True
    share_layers: bool = False

    def __post_init__(self):
        self.hidden_act = _ACTIVATION_ALIASES.get(self.hidden_act, self.hidden_act)
        if self.hidden_act not in _ACTIVATIONS:
            raise ValueError(
                f"hidden_act must be one of {_ACTIVATIONS}, got {self.hidden_act!r}"
            )
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads",
                     "intermediate_size", "max_position_embeddings"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("type_vocab_size", "position_offset"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"{name} must be a non-negative int, got {value!r}")
        if self.embedding_size is not None and (
                not isinstance(self.embedding_size, int)
                or self.embedding_size <= 0):
            raise ValueError("embedding_size must be a positive int or None, "
                             f"got {self.embedding_size!r}")
        if self.position_offset >= self.max_position_embeddings:
            raise ValueError(
                f"position_offset ({self.position_offset}) leaves no rows of "
                f"max_position_embeddings ({self.max_position_embeddings})")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) is not divisible by "
                f"num_heads ({self.num_heads})"
            )

    @property
    def head_size(self):
        return self.hidden_size // self.num_heads

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        """Builds a config from our own keys, Google `bert_config.json` keys or
        HF `config.json` keys (unknown keys are ignored)."""
        renames = {
            "num_hidden_layers": "num_layers",
            "num_attention_heads": "num_heads",
            "hidden_dropout_prob": "hidden_dropout",
            "attention_probs_dropout_prob": "attention_dropout",
            "layer_norm_eps": "layer_norm_epsilon",
        }
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {}
        for key, value in values.items():
            key = renames.get(key, key)
            if key in fields:
                kwargs[key] = value
        if values.get("model_type") not in (None, "bert"):
            raise ValueError(
                f"config has model_type={values['model_type']!r}, not 'bert'; "
                "load other families with tfbert.Encoder.from_pretrained"
            )
        if values.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(
                "only absolute position embeddings are supported, got "
                f"position_embedding_type={values['position_embedding_type']!r}"
            )
        return cls(**kwargs)

    @classmethod
    def from_json_file(cls, path):
        """Reads Google `bert_config.json`, HF `config.json` or our own file."""
        if not os.path.exists(path):
            raise FileNotFoundError(f"config file not found: {path}")
        values = read_json(path)
        try:
            return cls.from_dict(values)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: {e}") from e

    def to_json_file(self, path, style="tfbert"):
        """Writes the config. `style` is "tfbert", "google" or "hf"."""
        values = self.to_dict()
        if style in ("google", "hf"):
            if (self.embedding_size is not None or self.position_offset
                    or self.share_layers or not self.type_vocab_size):
                raise ValueError(
                    f"a {style} BERT config cannot express embedding_size, "
                    "position_offset, share_layers or type_vocab_size=0; "
                    "save other families with their encoder's save_pretrained")
            act = hf_activation(self.hidden_act)
            values = {
                "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size,
                "num_hidden_layers": self.num_layers,
                "num_attention_heads": self.num_heads,
                "intermediate_size": self.intermediate_size,
                "hidden_act": act,
                "hidden_dropout_prob": self.hidden_dropout,
                "attention_probs_dropout_prob": self.attention_dropout,
                "max_position_embeddings": self.max_position_embeddings,
                "type_vocab_size": self.type_vocab_size,
                "initializer_range": self.initializer_range,
            }
            if style == "hf":
                values.update(model_type="bert", architectures=["BertModel"],
                              layer_norm_eps=self.layer_norm_epsilon,
                              pad_token_id=0,
                              position_embedding_type="absolute")
        elif style != "tfbert":
            raise ValueError(f"unknown config style {style!r}")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(values, f, indent=2, sort_keys=True)
            f.write("\n")
