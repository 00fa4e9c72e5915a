"""Reads the module pipeline of a sentence-transformers directory.

A sentence-transformers model directory lists its modules in `modules.json`
(Transformer -> Pooling -> optional Dense -> optional Normalize), each in its
own subdirectory with a `config.json`. Legacy saves spell the pooling as
`pooling_mode_*_tokens` booleans and the sequence length in
`sentence_bert_config.json`; newer ones write `"pooling_mode": "mean"` and
the tokenizer's `model_max_length`.
"""

import dataclasses
from pathlib import Path

import numpy as np

from tfbert.utils.json_file import read_json

# Module class names (the last part of `type`, which moved between releases:
# `sentence_transformers.models.Pooling`,
# `sentence_transformers.sentence_transformer.modules.pooling.Pooling`).
_SUPPORTED = ("Transformer", "Pooling", "Dense", "Normalize")
_LEGACY_POOLING = {"pooling_mode_cls_token": "cls",
                   "pooling_mode_mean_tokens": "mean",
                   "pooling_mode_max_tokens": "max"}
# torch activation classes -> Keras activation names.
_ACTIVATIONS = {"Tanh": "tanh", "Identity": None, "ReLU": "relu",
                "Sigmoid": "sigmoid", "GELU": "gelu"}
# HF writes a huge sentinel as model_max_length when there is none.
_NO_LENGTH = 10 ** 9


@dataclasses.dataclass(frozen=True)
class DenseModule:
    """A Dense module: `activation(x @ kernel + bias)`.

    Attributes:
      kernel: float32 [in_features, out_features].
      bias: float32 [out_features], or None.
      activation: a Keras activation name, or None (identity).
    """

    kernel: np.ndarray
    bias: np.ndarray | None
    activation: str | None


@dataclasses.dataclass(frozen=True)
class SentenceTransformerPipeline:
    """What a sentence-transformers directory says about its embedding.

    Attributes:
      transformer_dir: the directory of the Transformer module's weights.
      pooling: "mean", "cls" or "max" (None: no Pooling module).
      dense: the Dense modules in order.
      normalize: whether a Normalize module ends the pipeline.
      max_seq_length: tokens per text, or None when not stated.
    """

    transformer_dir: Path
    pooling: str | None
    dense: tuple
    normalize: bool
    max_seq_length: int | None


def read_pipeline(directory):
    """The `SentenceTransformerPipeline` of `directory`, or None when it
    has no `modules.json` (a plain HF or tfbert checkpoint).

    Raises:
      ValueError naming the file: a module type or pooling mode tfbert does
      not reproduce (it would change the embedding), or a malformed field.
    """
    directory = Path(directory)
    path = directory / "modules.json"
    if not path.is_file():
        return None
    modules = read_json(path)
    kinds = [str(module.get("type", "")).rsplit(".", 1)[-1]
             for module in modules]
    unsupported = [module.get("type") for module, kind in zip(modules, kinds)
                   if kind not in _SUPPORTED]
    if unsupported or kinds[:1] != ["Transformer"]:
        raise ValueError(
            f"{path}: modules {unsupported or kinds} are not supported (a "
            "Transformer, then Pooling, Dense and Normalize modules)")
    transformer_dir = directory / modules[0].get("path", "")
    pooling, dense = None, []
    for module, kind in zip(modules[1:], kinds[1:]):
        module_dir = directory / module.get("path", "")
        if kind == "Pooling":
            pooling = _read_pooling(module_dir / "config.json")
        elif kind == "Dense":
            dense.append(_read_dense(module_dir))
    return SentenceTransformerPipeline(
        transformer_dir=transformer_dir, pooling=pooling, dense=tuple(dense),
        normalize="Normalize" in kinds,
        max_seq_length=_read_max_seq_length(directory, transformer_dir))


def _read_pooling(path):
    config = read_json(path)
    if "pooling_mode" in config:
        modes = config["pooling_mode"]
        modes = [modes] if isinstance(modes, str) else list(modes)
    else:
        modes = [key for key, value in config.items()
                 if key.startswith("pooling_mode_") and value is True]
        modes = [_LEGACY_POOLING.get(mode, mode) for mode in modes]
    if len(modes) != 1 or modes[0] not in ("mean", "cls", "max"):
        raise ValueError(f"{path}: pooling modes {sorted(modes)} are not "
                         "supported; exactly one of mean, cls or max")
    if config.get("include_prompt", True) is not True:
        raise ValueError(f"{path}: include_prompt false is not supported")
    return modes[0]


def _read_dense(directory):
    from tfbert.checkpoints.hf import read_state_dict

    path = directory / "config.json"
    config = read_json(path)
    # Saves omit the default (Tanh).
    name = str(config.get("activation_function", "Tanh")).rsplit(".", 1)[-1]
    if name not in _ACTIVATIONS:
        raise ValueError(f"{path}: activation_function {name!r} is not "
                         f"supported; one of {sorted(_ACTIVATIONS)}")
    state = read_state_dict(directory)
    if "linear.weight" not in state:
        raise ValueError(f"{directory}: Dense weights have no linear.weight")
    kernel = np.asarray(state["linear.weight"], np.float32).T
    bias = state.get("linear.bias")
    expected = (config.get("in_features"), config.get("out_features"))
    if tuple(kernel.shape) != expected:
        raise ValueError(f"{path}: in_features, out_features {expected} but "
                         f"the weight is {kernel.shape[::-1]}")
    return DenseModule(kernel=kernel,
                       bias=None if bias is None else np.asarray(
                           bias, np.float32),
                       activation=_ACTIVATIONS[name])


def _read_max_seq_length(directory, transformer_dir):
    for path, key in ((directory / "sentence_bert_config.json",
                       "max_seq_length"),
                      (transformer_dir / "sentence_bert_config.json",
                       "max_seq_length"),
                      (transformer_dir / "tokenizer_config.json",
                       "model_max_length")):
        if not path.is_file():
            continue
        value = read_json(path).get(key)
        if value is None or (key == "model_max_length"
                             and isinstance(value, (int, float))
                             and value >= _NO_LENGTH):
            continue
        if not isinstance(value, int) or value < 2:
            raise ValueError(f"{path}: {key} must be an int >= 2, got "
                             f"{value!r}")
        return value
    return None
