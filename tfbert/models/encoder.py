"""`tfbert.Encoder`: the registry of encoder families.

Every family is a `BertEncoder` configured by `BertConfig`'s switches and
registered here with how to read its HF checkpoints: its `config.json`, the
prefix its task models put before the encoder's weights, and the renames from
its HF weight names to BERT's (after which BERT's checkpoint code does the
rest). docs/zoo.md says how to add one.
"""

import dataclasses
import json
import logging
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
      pretraining_class: the HF class of the family's pretraining model
        (masked-LM, with the sentence head where the family has one), which
        reads what `BertPretrainer` of the family saves.
      head_prefixes: `(prefix, bert_prefix)` pairs: a head weight of that
        model named `prefix...` is `BertForPreTraining`'s `bert_prefix...`
        (`cls.predictions...`, `cls.seq_relationship...`), and back; tied
        copies of the word embeddings map to `cls.predictions.decoder.`,
        which is skipped.
    """

    model_type: str
    encoder_class: type
    config_from_hf: Callable[[dict], BertConfig]
    config_to_hf: Callable[[BertConfig], dict]
    hf_prefix: str
    renames: tuple = ()
    inverse_renames: tuple = ()
    pretraining_class: str = ""
    head_prefixes: tuple = ()

    def bert_name(self, name):
        """The `BertModel` name of the family's HF weight `name`."""
        return _rename(name, self.renames)

    def hf_name(self, bert_name):
        """The family's HF name of the `BertModel` weight `bert_name`."""
        return _rename(bert_name, self.inverse_renames)

    def head_bert_name(self, name):
        """The `BertForPreTraining` name of the head weight `name` (as is
        when it is no pretraining head's)."""
        return _replace_prefix(name, self.head_prefixes)

    def head_hf_name(self, bert_name):
        """The family's name of the `BertForPreTraining` head weight."""
        return _replace_prefix(bert_name, [(bert, hf) for hf, bert
                                           in self.head_prefixes])


def _rename(name, renames):
    for pattern, replacement in renames:
        name = re.sub(pattern, replacement, name)
    return name


def _replace_prefix(name, prefixes):
    for prefix, replacement in prefixes:
        if name.startswith(prefix):
            return replacement + name.removeprefix(prefix)
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
            presets.resolve_preset(path)
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


def family_of(name_or_path):
    """The registered `Family` of a preset or checkpoint directory, read
    without loading weights; None for BERT (and anything BERT's loaders
    read)."""
    from tfbert import presets

    path = os.fspath(name_or_path)
    preset = presets.get_preset(path)
    if preset is not None:
        model_type = preset.model_type
    else:
        config_path = os.path.join(path, "config.json")
        model_type = (read_json(config_path).get("model_type")
                      if os.path.isfile(config_path) else None)
    return _FAMILIES.get(model_type)


def encoder_class(name_or_path):
    """The encoder class `Encoder.from_pretrained(name_or_path)` builds,
    read from the preset or `config.json` without loading weights."""
    family = family_of(name_or_path)
    return BertEncoder if family is None else family.encoder_class


def _split_state(family, state):
    """`(encoder weights, head weights)` of a family's HF state dict, both
    canonical: a task model's keys outside `hf_prefix` are its heads."""
    from tfbert.checkpoints import hf

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


def has_weights(directory):
    """Whether an HF directory has a weights file."""
    return any(os.path.isfile(os.path.join(directory, name))
               for name in ("model.safetensors", "pytorch_model.bin"))


def random_family_encoder(directory, **config_overrides):
    """The randomly initialised encoder of a family directory's
    `config.json` (pretraining from scratch); logged."""
    directory = os.fspath(directory)
    values = read_json(os.path.join(directory, "config.json"))
    family = _FAMILIES[values.get("model_type")]
    logging.getLogger(__name__).warning(
        "%s has no weights: the model starts randomly initialised", directory)
    return family.encoder_class(dataclasses.replace(
        _family_config(family, directory, values), **config_overrides))


def read_head_weights(directory):
    """The canonical (`cls/...`) pretraining-head weights of a family's HF
    checkpoint directory; {} for a bare encoder."""
    from tfbert.checkpoints import hf

    family = family_of(directory)
    return _split_state(family, hf.read_state_dict(os.fspath(directory)))[1]


def _family_config(family, directory, values):
    try:
        return family.config_from_hf(values)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{os.path.join(directory, 'config.json')}: {e}"
                         ) from e


def _load_family(family, directory, values, strict, config_overrides,
                 with_heads=False, add_pooler=False):
    """The family's encoder of an HF checkpoint (with `with_heads`, and the
    canonical head weights beside it). A pooler the checkpoint lacks is
    left out, or with `add_pooler` built randomly initialised."""
    from tfbert.checkpoints import hf
    from tfbert.checkpoints.loading import weights_for
    from tfbert.checkpoints.variable_map import (
        POOLER_PREFIX, assign_variables, encoder_variables)

    config = _family_config(family, directory, values)
    weights, heads = _split_state(family, hf.read_state_dict(directory))
    has_pooler = any(name.startswith(POOLER_PREFIX) for name in weights)
    if not has_pooler:
        config = dataclasses.replace(config, use_pooler=add_pooler)
    config = dataclasses.replace(config, **config_overrides)
    encoder = family.encoder_class(config)
    variables = encoder_variables(encoder)
    if add_pooler and not has_pooler:
        # The pooler starts random; everything else loads.
        variables = {name: value for name, value in variables.items()
                     if not name.startswith(POOLER_PREFIX)}
    assign_variables(variables, weights_for(encoder, weights), directory,
                     strict=strict)
    return (encoder, heads) if with_heads else encoder


def load_family_pretrainer(directory, strict=False, **config_overrides):
    """A `BertPretrainer` on a family's HF checkpoint: the encoder, loaded
    strictly, and the heads of the family's pretraining model where the
    checkpoint has them (with `strict`, all of them). A family with a
    sentence head gets a pooler, random if the checkpoint has none; the
    others none (their HF pretraining models have none). A directory with
    a config but no weights file gives a randomly initialised model of that
    config (pretraining from scratch). A head that starts random is
    logged."""
    from tfbert.checkpoints.variable_map import (
        HEAD_PREFIX, assign_variables, pretrainer_variables)
    from tfbert.models.bert_pretrainer import BertPretrainer

    directory = os.fspath(directory)
    values = read_json(os.path.join(directory, "config.json"))
    family = _FAMILIES[values.get("model_type")]
    sentence_head = family.encoder_class.sentence_objective is not None
    config_overrides.setdefault("use_pooler", sentence_head)
    if not has_weights(directory):
        return BertPretrainer(random_family_encoder(directory,
                                                    **config_overrides))
    encoder, heads = _load_family(
        family, directory, values, strict=True,
        config_overrides=config_overrides, with_heads=True,
        add_pooler=sentence_head)
    pretrainer = BertPretrainer(encoder)
    variables = {name: value for name, value in
                 pretrainer_variables(pretrainer).items()
                 if name.startswith(HEAD_PREFIX)}
    assign_variables(variables, heads, directory, strict=strict)
    head_names = {"predictions": "masked-LM",
                  "seq_relationship": str(encoder.sentence_objective)}
    for head in sorted({name.split("/")[1] for name in variables}
                       - {name.split("/")[1] for name in heads}):
        logging.getLogger(__name__).warning(
            "%s has no %s head: it starts randomly initialised", directory,
            head_names[head].replace("_", "-"))
    return pretrainer


def save_family_checkpoint(encoder, directory, tokenizer=None, heads=None,
                           extra_state=None, architecture=None):
    """Writes a family's HF layout atomically: config.json and
    model.safetensors of its bare model, or with `heads` (canonical
    `cls/...` weights) of its pretraining model (`Family.pretraining_class`,
    encoder weights under `hf_prefix`); and `tokenizer`'s files. A task
    model's own weights go in `extra_state` (HF names -> arrays), with its
    class as `architecture`."""
    from safetensors.numpy import save_file

    from tfbert.checkpoints import hf
    from tfbert.checkpoints.variable_map import (
        encoder_variables, read_variables)
    from tfbert.utils.atomic import publish_directory, staging_directory

    family = next(family for family in _FAMILIES.values()
                  if family.encoder_class is type(encoder))
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
        save_family_checkpoint(self, directory, tokenizer)
