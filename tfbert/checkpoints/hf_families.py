"""HF checkpoints of the families other than BERT, through their registry
entries (`tfbert.families.Family`): the family's `config.json` keys become a
`BertConfig`, its weight names `BertModel`'s (after which BERT's HF code does
the rest), and back."""

import json
import logging
import os

import numpy as np

from tfbert.checkpoints import hf
from tfbert.checkpoints.variable_map import (
    assign_variables, encoder_variables, read_variables)
from tfbert.utils.atomic import (check_writable, publish_directory,
                                 staging_directory)


def has_weights(directory):
    """Whether an HF directory has a weights file."""
    return any(os.path.isfile(os.path.join(directory, name))
               for name in ("model.safetensors", "pytorch_model.bin"))


def read_config(family, directory, values):
    """The `BertConfig` of a family's `config.json` dict `values`; a bad
    value is an error naming the file."""
    try:
        return family.config_from_hf(values)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{os.path.join(directory, 'config.json')}: {e}"
                         ) from e


def split_state(family, state):
    """`(encoder weights, head weights)` of a family's HF state dict, both
    canonical: a task model's keys outside `hf_prefix` are its heads (only
    the pretraining heads, `cls/...`, are kept)."""
    heads = {}
    if any(key.startswith(family.hf_prefix) for key in state):
        heads = {family.head_bert_name(key): value
                 for key, value in state.items()
                 if not key.startswith(family.hf_prefix)}
        state = {key.removeprefix(family.hf_prefix): value
                 for key, value in state.items()
                 if key.startswith(family.hf_prefix)}
    encoder = hf.canonical_weights(
        {family.bert_name(key): value for key, value in state.items()})
    heads = hf.canonical_weights({key: value for key, value in heads.items()
                                  if key.startswith("cls.")})
    return encoder, heads


def read_weights(family, directory):
    """The canonical weights (encoder and pretraining heads) of a family's HF
    checkpoint directory."""
    encoder, heads = split_state(family, hf.read_state_dict(directory))
    return {**encoder, **heads}


def warn_random(directory, what):
    """Logs that `what` of the checkpoint `directory` starts random."""
    logging.getLogger(__name__).warning(
        "%s has no %s: %s randomly initialised", directory, what,
        "the model starts" if what == "weights" else "it starts")


def load_task_weights(variables, directory, strict, what):
    """Assigns a task model's own weights (`variables`: HF name ->
    `(variable, transposed)`) from an HF checkpoint directory; with
    `strict` every one must be there, otherwise a missing `what` starts
    random (logged)."""
    state = hf.read_state_dict(directory)
    weights = {name: state[name] for name in variables if name in state}
    assign_variables(variables, weights, directory, strict=strict)
    if not weights:
        warn_random(directory, what)


def save_family_checkpoint(family, encoder, directory, tokenizer=None,
                           heads=None, extra_state=None, architecture=None):
    """Writes a family's HF layout atomically: config.json and
    model.safetensors of its bare model, or with `heads` (canonical
    `cls/...` weights) of its pretraining model (`Family.pretraining_class`,
    encoder weights under `hf_prefix`); and `tokenizer`'s files. A task
    model's own weights go in `extra_state` (HF names -> arrays), with its
    class as `architecture`."""
    from safetensors.numpy import save_file

    directory = os.path.abspath(os.fspath(directory))
    check_writable(directory)
    architecture = architecture or (family.pretraining_class if heads
                                    else None)
    prefix = family.hf_prefix if architecture else ""
    state = {}
    for name, value in read_variables(encoder_variables(encoder)).items():
        bert_name, transposed = hf.canonical_to_hf(name)
        state[prefix + family.hf_name(bert_name.removeprefix("bert."))] = (
            np.ascontiguousarray(value.T if transposed else value))
    for name, value in (heads or {}).items():
        bert_name, transposed = hf.canonical_to_hf(name)
        state[family.head_hf_name(bert_name)] = (
            np.ascontiguousarray(value.T if transposed else value))
    state.update({name: np.ascontiguousarray(value)
                  for name, value in (extra_state or {}).items()})
    config = family.config_to_hf(encoder.config)
    if architecture:
        config["architectures"] = [architecture]
    with staging_directory(os.path.dirname(directory)) as staging:
        save_file(state, os.path.join(staging, "model.safetensors"),
                  metadata={"format": "pt"})
        with open(os.path.join(staging, "config.json"), "w",
                  encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        if tokenizer is not None:
            tokenizer.save_pretrained(staging)
        publish_directory(staging, directory)
