"""keras-hub BERT presets (`config.json` + `model.weights.h5` + assets).

keras-hub's `BertBackbone` computes GELU in its tanh form, so a preset read
from keras-hub gets `hidden_act="gelu_approximate"`: the encoder then
reproduces keras-hub's numbers. Its attention kernels are stored per head
([H, heads, head_size]); the canonical layout is [H, H] with heads as
contiguous column blocks, a plain reshape.
"""

import json
import os

import numpy as np

from tfbert.config import BertConfig


def is_preset(directory):
    path = os.path.join(directory, "config.json")
    if not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as f:
        try:
            config = json.load(f)
        except json.JSONDecodeError:
            return False
    return isinstance(config, dict) and "keras_hub" in str(config.get("module", ""))


def _backbone_variables(backbone):
    """Canonical name -> (variable, to_canonical, from_canonical)."""
    hidden = backbone.hidden_dim
    flat = (lambda v: v.reshape(hidden, hidden),
            lambda v, shape: v.reshape(shape))
    same = (lambda v: v, lambda v, shape: v)
    bias = (lambda v: v.reshape(hidden), lambda v, shape: v.reshape(shape))
    names = {
        "bert/embeddings/word_embeddings": (backbone.token_embedding.embeddings, same),
        "bert/embeddings/position_embeddings": (
            backbone.position_embedding.position_embeddings, same),
        "bert/embeddings/token_type_embeddings": (
            backbone.segment_embedding.embeddings, same),
        "bert/embeddings/LayerNorm/gamma": (backbone.embeddings_layer_norm.gamma, same),
        "bert/embeddings/LayerNorm/beta": (backbone.embeddings_layer_norm.beta, same),
        "bert/pooler/dense/kernel": (backbone.pooled_dense.kernel, same),
        "bert/pooler/dense/bias": (backbone.pooled_dense.bias, same),
    }
    for i, layer in enumerate(backbone.transformer_layers):
        prefix = f"bert/encoder/layer_{i}/"
        attention = layer._self_attention_layer
        for name, dense in (("query", attention._query_dense),
                            ("key", attention._key_dense),
                            ("value", attention._value_dense)):
            names[f"{prefix}attention/self/{name}/kernel"] = (dense.kernel, flat)
            names[f"{prefix}attention/self/{name}/bias"] = (dense.bias, bias)
        names[prefix + "attention/output/dense/kernel"] = (
            attention._output_dense.kernel, flat)
        names[prefix + "attention/output/dense/bias"] = (
            attention._output_dense.bias, same)
        for name, dense in (("intermediate/dense", layer._feedforward_intermediate_dense),
                            ("output/dense", layer._feedforward_output_dense)):
            names[f"{prefix}{name}/kernel"] = (dense.kernel, same)
            names[f"{prefix}{name}/bias"] = (dense.bias, same)
        for name, norm in (("attention/output/LayerNorm", layer._self_attention_layer_norm),
                           ("output/LayerNorm", layer._feedforward_layer_norm)):
            names[f"{prefix}{name}/gamma"] = (norm.gamma, same)
            names[f"{prefix}{name}/beta"] = (norm.beta, same)
    return names


def read_preset(directory):
    """Returns (BertConfig, canonical weights) of a keras-hub preset."""
    import keras_hub

    backbone = keras_hub.models.BertBackbone.from_preset(directory)
    config = BertConfig(
        vocab_size=backbone.vocabulary_size, hidden_size=backbone.hidden_dim,
        num_layers=backbone.num_layers, num_heads=backbone.num_heads,
        intermediate_size=backbone.intermediate_dim,
        hidden_act="gelu_approximate", hidden_dropout=backbone.dropout,
        attention_dropout=backbone.dropout,
        max_position_embeddings=backbone.max_sequence_length,
        type_vocab_size=backbone.num_segments)
    weights = {name: to_canonical(np.asarray(variable.numpy(), np.float32))
               for name, (variable, (to_canonical, _)) in
               _backbone_variables(backbone).items()}
    return config, weights


def write_preset(directory, config, weights, vocabulary, lowercase):
    """Writes a keras-hub preset (backbone + tokenizer) from canonical
    weights. keras-hub computes tanh-GELU whatever `config.hidden_act` says."""
    import keras_hub

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_layers,
        num_heads=config.num_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        dropout=config.hidden_dropout,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size)
    for name, (variable, (_, from_canonical)) in _backbone_variables(backbone).items():
        variable.assign(from_canonical(weights[name], tuple(variable.shape)))
    backbone.save_to_preset(directory)
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=list(vocabulary),
                                               lowercase=lowercase)
    tokenizer.save_to_preset(directory)
