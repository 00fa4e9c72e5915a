"""Hugging Face `transformers` BERT checkpoints (safetensors or PyTorch).

Other families' HF files are read with `read_state_dict` and renamed to BERT's
HF names by their family module before `canonical_weights` (see
`tfbert.models.encoder`)."""

import os
import re

import numpy as np

from tfbert.checkpoints.variable_map import HEAD_PREFIX

# HF buffers that are not weights.
_SKIPPED = ("position_ids", "token_type_ids")
# Tied copies of other weights in BertForPreTraining / BertForMaskedLM files.
_TIED = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")

_LAYER = re.compile(r"^bert/encoder/layer/(\d+)/")


def _hf_to_canonical(name):
    """Returns (canonical name, transposed) for one HF state-dict key."""
    if not name.startswith(("bert.", "cls.")):
        name = "bert." + name
    parts = name.split(".")
    leaf, path = parts[-1], "/".join(parts[:-1])
    path = _LAYER.sub(lambda m: f"bert/encoder/layer_{m.group(1)}/", path + "/")
    path = path.rstrip("/")
    if path == "cls/predictions" and leaf == "bias":
        return "cls/predictions/output_bias", False
    if path == "cls/seq_relationship":
        return f"cls/seq_relationship/output_{'weights' if leaf == 'weight' else 'bias'}", False
    if path.endswith("LayerNorm"):
        leaf = {"weight": "gamma", "bias": "beta"}.get(leaf, leaf)
        return f"{path}/{leaf}", False
    if path.endswith("_embeddings"):
        return path, False
    if leaf == "weight":
        return f"{path}/kernel", True
    return f"{path}/{leaf}", False


def canonical_to_hf(name):
    """Inverse of `_hf_to_canonical` (always with LayerNorm weight/bias)."""
    transposed = name.endswith("/kernel")
    if name == "cls/predictions/output_bias":
        return "cls.predictions.bias", False
    if name.startswith("cls/seq_relationship/"):
        leaf = "weight" if name.endswith("output_weights") else "bias"
        return f"cls.seq_relationship.{leaf}", False
    name = re.sub(r"layer_(\d+)", r"layer.\1", name)
    name = name.replace("LayerNorm/gamma", "LayerNorm/weight")
    name = name.replace("LayerNorm/beta", "LayerNorm/bias")
    name = re.sub(r"/kernel$", "/weight", name)
    if name.endswith("_embeddings"):
        name += "/weight"
    return name.replace("/", "."), transposed


def read_state_dict(directory):
    """Returns the HF state dict of `model.safetensors` (or
    `pytorch_model.bin`, which needs torch) as numpy arrays, keys as stored."""
    path = os.path.join(directory, "model.safetensors")
    if os.path.exists(path):
        from safetensors.numpy import load_file

        try:
            state = load_file(path)
        except Exception as e:  # safetensors raises its own error types.
            raise ValueError(f"{path}: not a readable safetensors file: {e}") from e
    else:
        path = os.path.join(directory, "pytorch_model.bin")
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{directory}: no model.safetensors or pytorch_model.bin")
        try:
            import torch
        except ImportError as e:
            raise ImportError(f"reading {path} needs PyTorch; convert it to "
                              "safetensors or pip install torch") from e
        state = {k: v.float().numpy() for k, v in
                 torch.load(path, map_location="cpu", weights_only=True).items()}
    return state


def canonical_weights(state):
    """Converts a BERT-named HF state dict to the canonical dict, skipping
    buffers and the tied copies of other weights."""
    weights = {}
    for key, value in state.items():
        if key.endswith(_SKIPPED) or key in _TIED:
            continue
        name, transposed = _hf_to_canonical(key)
        value = np.asarray(value, dtype=np.float32)
        weights[name] = value.T if transposed else value
    return weights


def read_weights(directory):
    """Reads an HF BERT directory's weights into the canonical dict."""
    return canonical_weights(read_state_dict(directory))


def write_weights(directory, weights):
    """Writes the canonical dict as `model.safetensors` in HF's naming.

    An encoder-only dict gets `BertModel` keys (no `bert.` prefix); a dict
    with pretraining heads gets `BertForPreTraining` keys."""
    from safetensors.numpy import save_file

    with_heads = any(name.startswith(HEAD_PREFIX) for name in weights)
    state = {}
    for name, value in weights.items():
        key, transposed = canonical_to_hf(name)
        if not with_heads:
            key = key.removeprefix("bert.")
        state[key] = np.ascontiguousarray(value.T if transposed else value,
                                          dtype=np.float32)
    if with_heads:
        state["cls.predictions.decoder.weight"] = state[
            "bert.embeddings.word_embeddings.weight"]
        state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"]
    save_file(state, os.path.join(directory, "model.safetensors"),
              metadata={"format": "pt"})
