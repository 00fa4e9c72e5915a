"""Reading a TF Hub BERT encoder SavedModel as a checkpoint.

Two kinds of SavedModel are read:

  * TF Hub's BERT encoders as TF Model Garden's `export_tfhub` writes them
    (the published `bert_en_*`, `small_bert/*` TF2 models): variables named
    `word_embeddings/embeddings`, `transformer/layer_N/self_attention/query/
    kernel` [H, heads, head_dim], ..., and with an `mlm` sub-object the
    masked-LM head `bert/cls/predictions/...`. The config is inferred from
    the shapes; the activation is then the tanh-approximated GELU that
    Model Garden's BERT uses.
  * tfbert's own exports (`tfbert.hub.export_encoder`), which carry their
    config as the asset `tfbert_config.json` and tfbert's variable names.

The `variables/` checkpoint inside a SavedModel is keyed by object position,
not by name, so the SavedModel is loaded and its variables are mapped by
their `.name`. Every float variable must map to a canonical name
(`tfbert.checkpoints.variable_map`) and have the expected shape; the error
names the SavedModel and the variables.
"""

import re

import numpy as np

from tfbert.checkpoints.variable_map import pretrainer_variables
from tfbert.config import BertConfig
from tfbert.models.bert_encoder import BertEncoder
from tfbert.models.bert_pretrainer import MaskedLMPretrainer
from tfbert.utils.tf_hub import (asset_path, load_saved_model,
                                 tokenizer_settings)

# The asset of tfbert's own exports (`tfbert.hub.export_encoder`) that holds
# the encoder's config.
CONFIG_ATTRIBUTE = "tfbert_config_file"

# Model Garden name (after any outer scope, without ":0") -> canonical name.
# "{i}" is the layer index.
_MODEL_GARDEN_NAMES = {
    "word_embeddings/embeddings": "bert/embeddings/word_embeddings",
    "position_embedding/embeddings": "bert/embeddings/position_embeddings",
    "type_embeddings/embeddings": "bert/embeddings/token_type_embeddings",
    "embeddings/layer_norm/gamma": "bert/embeddings/LayerNorm/gamma",
    "embeddings/layer_norm/beta": "bert/embeddings/LayerNorm/beta",
    "pooler_transform/kernel": "bert/pooler/dense/kernel",
    "pooler_transform/bias": "bert/pooler/dense/bias",
    "cls/predictions/output_bias/bias": "cls/predictions/output_bias",
    "cls/predictions/transform/dense/kernel":
        "cls/predictions/transform/dense/kernel",
    "cls/predictions/transform/dense/bias":
        "cls/predictions/transform/dense/bias",
    "cls/predictions/transform/LayerNorm/gamma":
        "cls/predictions/transform/LayerNorm/gamma",
    "cls/predictions/transform/LayerNorm/beta":
        "cls/predictions/transform/LayerNorm/beta",
}
_MODEL_GARDEN_LAYER_NAMES = {
    "self_attention/query": "attention/self/query",
    "self_attention/key": "attention/self/key",
    "self_attention/value": "attention/self/value",
    "self_attention/attention_output": "attention/output/dense",
    "self_attention_layer_norm": "attention/output/LayerNorm",
    "intermediate": "intermediate/dense",
    "output": "output/dense",
    "output_layer_norm": "output/LayerNorm",
}
_LAYER = re.compile(r"(?:^|/)transformer/layer_(\d+)/(.+)/(kernel|bias|gamma|beta)$")


def _named_values(loaded, directory):
    """{name without ':0': numpy value} of the float variables of the encoder
    (and of its `mlm` sub-object when there is one)."""
    if not hasattr(loaded, "variables"):
        raise ValueError(f"{directory}: not a reusable SavedModel (the root "
                         "has no `variables` list), so not a TF Hub encoder")
    variables = list(loaded.variables)
    if hasattr(loaded, "mlm"):
        variables += list(loaded.mlm.variables)
    values = {}
    for variable in variables:
        # Skip do_lower_case and dropout seed states.
        if not variable.dtype.is_floating:
            continue
        name = variable.name.split(":")[0]
        # The `mlm` sub-object lists the encoder's variables again.
        if name in values:
            if variable.shape != values[name].shape:
                raise ValueError(f"{directory}: two variables named {name!r}")
            continue
        values[name] = variable.numpy()
    if not values:
        raise ValueError(f"{directory}: a SavedModel without float variables "
                         "is not a BERT encoder")
    return values


def _model_garden_name(name):
    """The canonical name of a Model Garden variable name, or None."""
    match = _LAYER.search(name)
    if match:
        index, layer, kind = match.groups()
        if layer in _MODEL_GARDEN_LAYER_NAMES:
            return (f"bert/encoder/layer_{index}/"
                    f"{_MODEL_GARDEN_LAYER_NAMES[layer]}/{kind}")
        return None
    for suffix, canonical in _MODEL_GARDEN_NAMES.items():
        if name == suffix or name.endswith("/" + suffix):
            return canonical
    return None


def _to_canonical_layout(canonical, value, directory, name):
    """Einsum-shaped attention weights -> the canonical [H, H] / [H]."""
    if "/attention/" not in canonical or value.ndim == (
            2 if canonical.endswith("kernel") else 1):
        return value
    if canonical.endswith("/attention/output/dense/kernel"):
        if value.ndim != 3:
            raise ValueError(f"{directory}: {name} has shape {value.shape}; "
                             "expected [heads, head_dim, hidden]")
        return value.reshape(-1, value.shape[-1])
    expected = 3 if canonical.endswith("kernel") else 2
    if value.ndim != expected:
        raise ValueError(f"{directory}: {name} has shape {value.shape}; "
                         "expected [hidden, heads, head_dim] (kernel) or "
                         "[heads, head_dim] (bias)")
    return value.reshape(value.shape[:-2] + (-1,)) if expected == 3 else (
        value.reshape(-1))


def _infer_config(named, directory):
    """A `BertConfig` from the shapes of Model Garden variables (`named`:
    canonical name -> (name, value as stored))."""
    def shape(name):
        if name not in named:
            raise ValueError(f"{directory}: no variable for {name} (the TF Hub "
                             "names are listed in "
                             "tfbert/checkpoints/tf_hub.py)")
        return named[name][1].shape

    vocab_size, hidden_size = shape("bert/embeddings/word_embeddings")
    layers = {int(m.group(1)) for m in (
        re.match(r"bert/encoder/layer_(\d+)/", n) for n in named) if m}
    return BertConfig(
        vocab_size=int(vocab_size), hidden_size=int(hidden_size),
        num_layers=len(layers),
        num_heads=int(shape(
            "bert/encoder/layer_0/attention/self/query/kernel")[1]),
        intermediate_size=int(shape(
            "bert/encoder/layer_0/intermediate/dense/kernel")[1]),
        max_position_embeddings=int(shape(
            "bert/embeddings/position_embeddings")[0]),
        type_vocab_size=int(shape("bert/embeddings/token_type_embeddings")[0]),
        hidden_act="gelu_approximate")


def _tfbert_names(config):
    """Keras variable path -> canonical name for tfbert's own exports.

    Paths depend only on the depth, so a tiny model of the same depth names
    them.
    """
    tiny = MaskedLMPretrainer(BertEncoder(BertConfig(
        vocab_size=4, hidden_size=2, num_layers=config.num_layers,
        num_heads=1, intermediate_size=2, max_position_embeddings=2)))
    return {variable.path: canonical for canonical, (variable, _) in
            pretrainer_variables(tiny).items()}


def _map_names(values, to_canonical, directory):
    weights, unused = {}, []
    for name, value in values.items():
        canonical = to_canonical(name)
        if canonical is None:
            unused.append(name)
            continue
        if canonical in weights:
            raise ValueError(f"{directory}: more than one variable maps to "
                             f"{canonical} (last: {name})")
        weights[canonical] = (name, value)
    if unused:
        raise ValueError(
            f"TF Hub SavedModel {directory} has variables tfbert does not "
            f"know: {', '.join(sorted(unused))}")
    return weights


def read_hub_checkpoint(directory):
    """Reads a TF Hub BERT encoder SavedModel.

    Args:
      directory: the SavedModel directory.

    Returns:
      `(config, weights, vocab_path, lowercase)`: a `BertConfig`, the
      canonical numpy dict (with the masked-LM head when the SavedModel has an
      `mlm` sub-object), the `vocab_file` asset's path (or None) and
      `do_lower_case` (or None).
    """
    directory = str(directory)
    loaded = load_saved_model(directory)
    values = _named_values(loaded, directory)
    config_path = asset_path(loaded, CONFIG_ATTRIBUTE)
    if config_path is not None:
        config = BertConfig.from_json_file(config_path)
        paths = _tfbert_names(config)

        def to_canonical(name):
            for path, canonical in paths.items():
                if name == path or name.endswith("/" + path):
                    return canonical
            return None

        named = _map_names(values, to_canonical, directory)
    else:
        named = _map_names(values, _model_garden_name, directory)
        config = _infer_config(named, directory)
    weights = {
        canonical: np.asarray(_to_canonical_layout(
            canonical, value, directory, name), np.float32)
        for canonical, (name, value) in named.items()}
    return (config, weights) + tokenizer_settings(loaded)
