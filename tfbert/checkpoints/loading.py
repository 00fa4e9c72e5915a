"""Finding, reading and writing checkpoints of every family in every
supported layout: the one place that detects a checkpoint's format and
family (see `read_checkpoint`)."""

import dataclasses
import os

from tfbert import families, presets
from tfbert.checkpoints import (hf, hf_families, keras_file, keras_hub_preset,
                                tf1, tf_hub)
from tfbert.checkpoints.variable_map import (
    HEAD_PREFIX, POOLER_PREFIX, assign_variables, encoder_variables,
    pretrainer_variables, read_variables)
from tfbert.config import BertConfig
from tfbert.models.bert_pretrainer import MaskedLMPretrainer
from tfbert.text.bert_tokenizer import BertTokenizer
from tfbert.text.vocab import find_vocabulary, load_vocabulary
from tfbert.utils.atomic import (check_writable, publish_directory,
                                 staging_directory)
from tfbert.utils.json_file import read_json
from tfbert.utils.tf_hub import (is_hub_handle, is_hub_saved_model,
                                 resolve_handle)

FORMATS = families.FORMATS


@dataclasses.dataclass
class Checkpoint:
    """A checkpoint read into memory.

    Attributes:
      source: what was read (a preset name or a path), for messages.
      format: "preset", "hf", "tf1", "keras_hub", "tf_hub" or "keras" (a
        `.keras` file of a model holding a BERT encoder).
      config: the architecture.
      weights: canonical name -> numpy array (see `variable_map`); empty for
        a preset without weights.
      vocab_path: the vocabulary file beside the weights, or None.
      model_type: the family (a `tfbert.families` name).
    """

    source: str
    format: str
    config: BertConfig
    weights: dict
    vocab_path: str | None
    model_type: str = "bert"


def _check_vocabulary(checkpoint):
    if checkpoint.vocab_path is None:
        return
    size = len(load_vocabulary(checkpoint.vocab_path))
    if size != checkpoint.config.vocab_size:
        raise ValueError(
            f"{checkpoint.source}: vocabulary {checkpoint.vocab_path} has "
            f"{size} tokens but the config says vocab_size="
            f"{checkpoint.config.vocab_size}")


def read_checkpoint(name_or_path, allow_no_weights=False):
    """Reads a preset name, TF Hub handle or checkpoint directory into a
    `Checkpoint`: the format is told by the directory's files, the family by
    its `config.json` `model_type` (HF) or the preset. With
    `allow_no_weights`, a family's HF directory with a config and no weights
    file reads as that config without weights (pretraining from scratch)."""
    name_or_path = os.fspath(name_or_path)
    if is_hub_handle(name_or_path):
        name_or_path = resolve_handle(name_or_path)
    preset = presets.resolve_preset(name_or_path)
    if preset is not None:
        directory = preset.directory()
        if not preset.has_weights:
            vocab = find_vocabulary(directory) if directory else None
            return Checkpoint(name_or_path, "preset", preset.config, {}, vocab,
                              preset.model_type)
        checkpoint = read_checkpoint(directory)
        checkpoint.source = f"{name_or_path} ({directory})"
        return checkpoint
    if keras_file.is_keras_file(name_or_path):
        config, weights, _ = keras_file.read_keras_file(name_or_path)
        return Checkpoint(name_or_path, "keras", config, weights, None)
    if not os.path.isdir(name_or_path):
        raise FileNotFoundError(
            f"{name_or_path!r} is neither a preset name, a directory nor a "
            ".keras file. "
            f"Presets: {', '.join(sorted(presets.PRESETS))}")
    directory = name_or_path
    vocab = find_vocabulary(directory)
    config_path = os.path.join(directory, "config.json")
    if keras_hub_preset.is_preset(directory):
        config, weights = keras_hub_preset.read_preset(directory)
        checkpoint = Checkpoint(directory, "keras_hub", config, weights, vocab)
    elif is_hub_saved_model(directory):
        config, weights, vocab, _ = tf_hub.read_hub_checkpoint(directory)
        checkpoint = Checkpoint(directory, "tf_hub", config, weights, vocab)
    elif os.path.exists(config_path):
        values = read_json(config_path)
        model_type = families.checked_model_type(values, config_path)
        if model_type != "bert":
            return _read_family(families.get(model_type), directory, values,
                                vocab, allow_no_weights)
        try:
            config = BertConfig.from_dict(values)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{config_path}: {e}") from e
        checkpoint = Checkpoint(directory, "hf", config,
                                hf.read_weights(directory), vocab)
    elif os.path.exists(os.path.join(directory, "bert_config.json")):
        prefix = tf1.find_checkpoint(directory)
        if prefix is None:
            raise FileNotFoundError(
                f"{directory}: has bert_config.json but no bert_model.ckpt.index")
        config = BertConfig.from_json_file(
            os.path.join(directory, "bert_config.json"))
        checkpoint = Checkpoint(directory, "tf1", config,
                                tf1.read_weights(prefix), vocab)
    else:
        raise FileNotFoundError(
            f"{directory}: not a BERT checkpoint directory; expected config.json "
            "+ model.safetensors/pytorch_model.bin (HF or save_pretrained), "
            "bert_config.json + bert_model.ckpt.* (Google TF1), a keras-hub "
            "preset, or a TF Hub BERT encoder SavedModel. Found: "
            f"{', '.join(sorted(os.listdir(directory))) or 'nothing'}")
    _check_vocabulary(checkpoint)
    return checkpoint


def _read_family(family, directory, values, vocab, allow_no_weights):
    """The `Checkpoint` of a family's HF directory; a checkpoint without the
    pooler's weights has `use_pooler=False`."""
    config = hf_families.read_config(family, directory, values)
    if allow_no_weights and not hf_families.has_weights(directory):
        hf_families.warn_random(directory, "weights")
        return Checkpoint(directory, "hf", config, {}, vocab,
                          family.model_type)
    weights = hf_families.read_weights(family, directory)
    if not any(name.startswith(POOLER_PREFIX) for name in weights):
        config = dataclasses.replace(config, use_pooler=False)
    return Checkpoint(directory, "hf", config, weights, vocab,
                      family.model_type)


def _config_with(config, overrides):
    return dataclasses.replace(config, **overrides) if overrides else config


def load_encoder(name_or_path, strict=True, encoder_class=None,
                 **config_overrides):
    """Builds the family's encoder of a checkpoint and loads the weights
    into it (see `tfbert.Encoder.from_pretrained`). With `encoder_class`, a
    checkpoint of another family is an error."""
    return build_encoder(read_checkpoint(name_or_path), strict=strict,
                         encoder_class=encoder_class, **config_overrides)


def build_encoder(checkpoint, strict=True, encoder_class=None,
                  **config_overrides):
    """The family's encoder of a read `Checkpoint`, with its weights (random
    when it has none); see `load_encoder`."""
    family = families.get(checkpoint.model_type)
    if encoder_class is not None:
        _check_family(checkpoint, family, encoder_class)
    encoder = family.encoder_class(
        _config_with(checkpoint.config, config_overrides))
    if checkpoint.weights:
        assign_variables(encoder_variables(encoder),
                         weights_for(encoder, checkpoint.weights),
                         checkpoint.source, strict=strict)
    return encoder


def _check_family(checkpoint, family, encoder_class):
    expected = families.of_encoder_class(encoder_class)
    if expected is family:
        return
    where = (f" (config.json: model_type={family.model_type!r})"
             if checkpoint.format == "hf" else "")
    raise ValueError(
        f"{checkpoint.source} holds a {family.encoder_class.__name__}, not a "
        f"{encoder_class.__name__}; tfbert.Encoder.from_pretrained builds any "
        f"family{where}")


def weights_for(encoder, weights):
    """`weights` less the pooler's when `encoder` was built without one."""
    if encoder.pooler is not None:
        return weights
    return {name: value for name, value in weights.items()
            if not name.startswith(POOLER_PREFIX)}


def load_pretrainer(name_or_path, strict=False, **config_overrides):
    """Builds a `MaskedLMPretrainer`, loading the encoder and, when the
    checkpoint has them, the masked-LM and sentence heads. The encoder is
    always loaded strictly; `strict` extends that to the heads. Any family's
    checkpoint works; a family preset without weights, or a family's HF
    directory with only a config, gives a randomly initialised model."""
    checkpoint = read_checkpoint(name_or_path, allow_no_weights=True)
    family = families.get(checkpoint.model_type)
    if family.model_type != "bert":
        if checkpoint.format == "preset":
            return MaskedLMPretrainer(family.encoder_class(
                _config_with(checkpoint.config, config_overrides)))
        return _load_family_pretrainer(family, checkpoint, strict,
                                       config_overrides)
    pretrainer = MaskedLMPretrainer(family.encoder_class(
        _config_with(checkpoint.config, config_overrides)))
    if checkpoint.weights:
        assign_variables(encoder_variables(pretrainer.encoder),
                         checkpoint.weights, checkpoint.source, strict=True)
        heads = {name: value for name, value in
                 pretrainer_variables(pretrainer).items()
                 if name.startswith(HEAD_PREFIX)}
        assign_variables(heads, {k: v for k, v in checkpoint.weights.items()
                                 if k.startswith(HEAD_PREFIX)},
                         checkpoint.source, strict=strict)
    return pretrainer


def _load_family_pretrainer(family, checkpoint, strict, config_overrides):
    """A family's HF checkpoint as a `MaskedLMPretrainer`: the encoder loaded
    strictly, the heads of the family's pretraining model where the
    checkpoint has them (with `strict`, all of them). A family with a
    sentence head gets a pooler, random if the checkpoint has none; the
    others none (their HF pretraining models have none). A model or head
    that starts random is logged."""
    directory = checkpoint.source
    sentence_head = family.encoder_class.sentence_objective is not None
    config_overrides.setdefault("use_pooler", sentence_head)
    encoder = family.encoder_class(
        dataclasses.replace(checkpoint.config, **config_overrides))
    if not checkpoint.weights:
        return MaskedLMPretrainer(encoder)
    variables = encoder_variables(encoder)
    if not any(name.startswith(POOLER_PREFIX) for name in checkpoint.weights):
        # The pooler starts random; everything else loads.
        variables = {name: value for name, value in variables.items()
                     if not name.startswith(POOLER_PREFIX)}
    assign_variables(variables, weights_for(encoder, checkpoint.weights),
                     directory, strict=True)
    pretrainer = MaskedLMPretrainer(encoder)
    variables = {name: value for name, value in
                 pretrainer_variables(pretrainer).items()
                 if name.startswith(HEAD_PREFIX)}
    heads = {name: value for name, value in checkpoint.weights.items()
             if name.startswith(HEAD_PREFIX)}
    assign_variables(variables, heads, directory, strict=strict)
    head_names = {"predictions": "masked-LM",
                  "seq_relationship": str(encoder.sentence_objective)}
    for head in sorted({name.split("/")[1] for name in variables}
                       - {name.split("/")[1] for name in heads}):
        hf_families.warn_random(
            directory, head_names[head].replace("_", "-") + " head")
    return pretrainer


def write_checkpoint(directory, config, weights, vocabulary=None,
                     lowercase=True, format="hf"):
    """Writes a checkpoint atomically (into a temporary sibling directory,
    then renamed) with the usual permissions (umask), in the layout `format`:

      "hf": config.json + model.safetensors (what `transformers` loads);
      "tf1": bert_config.json + bert_model.ckpt.* (Google's layout);
      "keras_hub": a keras-hub preset (needs `vocabulary`).

    `vocabulary` (a list of tokens) is written as vocab.txt with an HF
    tokenizer_config.json.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown checkpoint format {format!r}; one of {FORMATS}")
    directory = os.path.abspath(os.fspath(directory))
    check_writable(directory)
    with staging_directory(os.path.dirname(directory)) as staging:
        if format == "keras_hub":
            if vocabulary is None:
                raise ValueError("a keras-hub preset needs the vocabulary")
            keras_hub_preset.write_preset(staging, config, weights, vocabulary,
                                          lowercase)
        else:
            if format == "hf":
                config.to_json_file(os.path.join(staging, "config.json"), "hf")
                hf.write_weights(staging, weights)
            else:
                config.to_json_file(os.path.join(staging, "bert_config.json"),
                                    "google")
                tf1.write_weights(staging, weights)
            if vocabulary is not None:
                BertTokenizer(list(vocabulary), lowercase=lowercase
                              ).save_pretrained(staging)
        publish_directory(staging, directory)


def save_encoder(encoder, directory, tokenizer=None, format="hf",
                 task_variables=None, architecture=None):
    """Writes `encoder` (and `tokenizer`'s files) as a checkpoint that
    `from_pretrained(directory)` reads back: BERT in any `format`, the other
    families in their HF layout (format "hf" only). A family's task model
    adds its own weights (`task_variables`: HF name -> `(variable,
    transposed)`) and names its HF class (`architecture`)."""
    family = _family_saving(encoder, format)
    if family.config_to_hf is not None:
        hf_families.save_family_checkpoint(
            family, encoder, directory, tokenizer,
            extra_state=(read_variables(task_variables) if task_variables
                         else None),
            architecture=architecture)
        return
    if task_variables or architecture:
        raise ValueError("a BERT task model's own weights are saved with "
                         "Keras (model.save), not in a checkpoint")
    write_checkpoint(
        directory, encoder.config, read_variables(encoder_variables(encoder)),
        vocabulary=tokenizer.vocabulary if tokenizer is not None else None,
        lowercase=tokenizer.lowercase if tokenizer is not None else True,
        format=format)


def save_pretrainer(pretrainer, directory, tokenizer=None, format="hf"):
    """Writes the encoder and its pretraining heads: for BERT in any
    `format`, for the other families as their HF pretraining model
    (`Family.pretraining_class`, format "hf" only)."""
    family = _family_saving(pretrainer.encoder, format)
    if family.config_to_hf is not None:
        heads = {name: value for name, value in
                 pretrainer_variables(pretrainer).items()
                 if name.startswith(HEAD_PREFIX)}
        hf_families.save_family_checkpoint(
            family, pretrainer.encoder, directory, tokenizer,
            heads=read_variables(heads))
        return
    write_checkpoint(
        directory, pretrainer.encoder.config,
        read_variables(pretrainer_variables(pretrainer)),
        vocabulary=tokenizer.vocabulary if tokenizer is not None else None,
        lowercase=tokenizer.lowercase if tokenizer is not None else True,
        format=format)


def _family_saving(encoder, format):
    """The family of `encoder`, which must be written in `format`."""
    family = families.of_encoder_class(type(encoder))
    if format not in family.formats:
        raise ValueError(f"a {type(encoder).__name__} saves in HF's layout "
                         f"only, not {format!r}")
    return family
