"""`tfbert.Encoder`: the registry of encoder families.

Every family is a `BertEncoder` configured by `BertConfig`'s switches and
registered here with how to read its HF checkpoints: its `config.json`, the
prefix its task models put before the encoder's weights, and the renames from
its HF weight names to BERT's (after which BERT's checkpoint code does the
rest). docs/zoo.md says how to add one.
"""

import dataclasses
import json
import os
import re
from collections.abc import Callable

import keras
import numpy as np

from tfbert.config import BertConfig, hf_activation
from tfbert.models.bert_encoder import BertEncoder
from tfbert.utils.atomic import check_writable
from tfbert.utils.json_file import read_json


@dataclasses.dataclass(frozen=True)
class Family:
    """How to build one family's encoder from an HF checkpoint.

    Attributes:
      model_type: the `model_type` of the family's HF `config.json`.
      encoder_class: the `BertEncoder` subclass to build.
      config_from_hf: HF `config.json` dict -> `BertConfig`.
      hf_prefix: prefix of the encoder's weights inside the family's task
        models (`"distilbert."`); a bare HF model has none.
      config_to_hf: `BertConfig` -> the family's HF `config.json` dict.
      renames: `(pattern, replacement)` regexes, applied in order, that turn
        the family's HF weight names into `BertModel`'s.
      inverse_renames: the regexes back from `BertModel`'s names.
    """

    model_type: str
    encoder_class: type
    config_from_hf: Callable[[dict], BertConfig]
    config_to_hf: Callable[[BertConfig], dict]
    hf_prefix: str
    renames: tuple = ()
    inverse_renames: tuple = ()

    def bert_name(self, name):
        """The `BertModel` name of the family's HF weight `name`."""
        return _rename(name, self.renames)

    def hf_name(self, bert_name):
        """The family's HF name of the `BertModel` weight `bert_name`."""
        return _rename(bert_name, self.inverse_renames)


def _rename(name, renames):
    for pattern, replacement in renames:
        name = re.sub(pattern, replacement, name)
    return name


_FAMILIES = {}


def register_family(family):
    """Adds `family` to the registry (by its `model_type`); returns it."""
    _FAMILIES[family.model_type] = family
    return family


def bert_style_config(values, **switches):
    """A `BertConfig` from an HF config that uses BERT's key names (ELECTRA,
    RoBERTa, ALBERT), with `switches` replacing fields."""
    config = BertConfig.from_dict(
        {key: value for key, value in values.items() if key != "model_type"})
    return dataclasses.replace(config, **switches)


def bert_style_hf_config(config, model_type, **extra):
    """The HF `config.json` dict, in BERT's key names, of `config`."""
    return dict(
        model_type=model_type, vocab_size=config.vocab_size,
        hidden_size=config.hidden_size, num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        intermediate_size=config.intermediate_size,
        hidden_act=hf_activation(config.hidden_act),
        hidden_dropout_prob=config.hidden_dropout,
        attention_probs_dropout_prob=config.attention_dropout,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        initializer_range=config.initializer_range,
        layer_norm_eps=config.layer_norm_epsilon, **extra)


class Encoder:
    """Builds the encoder of whichever family a checkpoint holds.

    Example:
    ```python
    encoder = tfbert.Encoder.from_pretrained("path/to/hf/roberta")
    type(encoder).__name__  # "RobertaEncoder"
    ```
    """

    @staticmethod
    def families():
        """The registered `model_type`s, BERT's included."""
        return ("bert",) + tuple(sorted(_FAMILIES))

    @staticmethod
    def from_pretrained(name_or_path, strict=True, **config_overrides):
        """Returns the encoder of a preset name or checkpoint directory.

        An HF directory's `config.json` `model_type` picks the family;
        anything else (presets, Google TF1, keras-hub, `save_pretrained`
        directories, `model_type` "bert") is read by
        `BertEncoder.from_pretrained`. `config_overrides` replace
        `BertConfig` fields (e.g. `hidden_dropout=0.2`, `use_pooler=False`).
        With `strict`, an encoder variable the checkpoint lacks, or an
        encoder weight the model lacks, is an error listing them (a
        checkpoint without a pooler builds an encoder without one).
        """
        from tfbert import presets

        path = os.fspath(name_or_path)
        preset = presets.get_preset(path)
        if preset is not None and preset.model_type != "bert":
            return _FAMILIES[preset.model_type].encoder_class(
                dataclasses.replace(preset.config, **config_overrides))
        config_path = os.path.join(path, "config.json")
        model_type = None
        if os.path.isdir(path) and os.path.exists(config_path):
            values = read_json(config_path)
            model_type = values.get("model_type")
        if model_type in (None, "bert"):
            return BertEncoder.from_pretrained(path, strict=strict,
                                               **config_overrides)
        family = _FAMILIES.get(model_type)
        if family is None:
            raise ValueError(
                f"{config_path}: model_type {model_type!r} is not a known "
                f"encoder family; known: {', '.join(Encoder.families())}")
        return _load_family(family, path, values, strict, config_overrides)


def encoder_class(name_or_path):
    """The encoder class `Encoder.from_pretrained(name_or_path)` builds,
    read from the preset or `config.json` without loading weights."""
    from tfbert import presets

    path = os.fspath(name_or_path)
    preset = presets.get_preset(path)
    if preset is not None:
        model_type = preset.model_type
    else:
        config_path = os.path.join(path, "config.json")
        model_type = (read_json(config_path).get("model_type")
                      if os.path.isfile(config_path) else None)
    family = _FAMILIES.get(model_type)
    return BertEncoder if family is None else family.encoder_class


def _load_family(family, directory, values, strict, config_overrides):
    from tfbert.checkpoints import hf
    from tfbert.checkpoints.loading import weights_for
    from tfbert.checkpoints.variable_map import (
        POOLER_PREFIX, assign_variables, encoder_variables)

    try:
        config = family.config_from_hf(values)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{os.path.join(directory, 'config.json')}: {e}"
                         ) from e
    state = hf.read_state_dict(directory)
    if any(key.startswith(family.hf_prefix) for key in state):
        state = {key.removeprefix(family.hf_prefix): value
                 for key, value in state.items()
                 if key.startswith(family.hf_prefix)}
    weights = hf.canonical_weights(
        {family.bert_name(key): value for key, value in state.items()})
    if not any(name.startswith(POOLER_PREFIX) for name in weights):
        config = dataclasses.replace(config, use_pooler=False)
    config = dataclasses.replace(config, **config_overrides)
    encoder = family.encoder_class(config)
    assign_variables(encoder_variables(encoder), weights_for(encoder, weights),
                     directory, strict=strict)
    return encoder


@keras.saving.register_keras_serializable(package="tfbert")
class FamilyEncoder(BertEncoder):
    """Base of the non-BERT families' encoders: `from_pretrained` goes
    through the registry and checks that the checkpoint is this family."""

    @classmethod
    def from_pretrained(cls, name_or_path, strict=True, **config_overrides):
        encoder = Encoder.from_pretrained(name_or_path, strict=strict,
                                          **config_overrides)
        if not isinstance(encoder, cls):
            raise ValueError(
                f"{name_or_path} holds a {type(encoder).__name__}, not a "
                f"{cls.__name__}; tfbert.Encoder.from_pretrained builds any "
                "family")
        return encoder

    def save_pretrained(self, directory, tokenizer=None):
        """Writes the family's HF layout (config.json + model.safetensors),
        which `transformers` and `from_pretrained` load, and the files of
        `tokenizer` (anything with `save_pretrained(directory)`)."""
        from safetensors.numpy import save_file

        from tfbert.checkpoints import hf
        from tfbert.checkpoints.variable_map import (
            encoder_variables, read_variables)

        family = next(family for family in _FAMILIES.values()
                      if family.encoder_class is type(self))
        directory = os.fspath(directory)
        check_writable(directory)
        os.makedirs(directory, exist_ok=True)
        state = {}
        for name, value in read_variables(encoder_variables(self)).items():
            bert_name, transposed = hf.canonical_to_hf(name)
            state[family.hf_name(bert_name.removeprefix("bert."))] = (
                np.ascontiguousarray(value.T if transposed else value))
        save_file(state, os.path.join(directory, "model.safetensors"),
                  metadata={"format": "pt"})
        with open(os.path.join(directory, "config.json"), "w",
                  encoding="utf-8") as f:
            json.dump(family.config_to_hf(self.config), f, indent=2,
                      sort_keys=True)
            f.write("\n")
        if tokenizer is not None:
            tokenizer.save_pretrained(directory)
