"""Finding, reading and writing BERT checkpoints in every supported layout."""

import dataclasses
import os

from tfbert import presets
from tfbert.checkpoints import hf, keras_file, keras_hub_preset, tf1
from tfbert.checkpoints.variable_map import (
    HEAD_PREFIX, POOLER_PREFIX, assign_variables, encoder_variables,
    pretrainer_variables, read_variables)
from tfbert.config import BertConfig
from tfbert.text.vocab import find_vocabulary, load_vocabulary
from tfbert.utils.atomic import (check_writable, publish_directory,
                                 staging_directory)

FORMATS = ("hf", "tf1", "keras_hub")


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
    """

    source: str
    format: str
    config: BertConfig
    weights: dict
    vocab_path: str | None


def _check_vocabulary(checkpoint):
    if checkpoint.vocab_path is None:
        return
    size = len(load_vocabulary(checkpoint.vocab_path))
    if size != checkpoint.config.vocab_size:
        raise ValueError(
            f"{checkpoint.source}: vocabulary {checkpoint.vocab_path} has "
            f"{size} tokens but the config says vocab_size="
            f"{checkpoint.config.vocab_size}")


def read_checkpoint(name_or_path):
    """Reads a preset name or checkpoint directory into a `Checkpoint`."""
    name_or_path = os.fspath(name_or_path)
    # Imported here: tfbert.hub pulls in the models and tfbert.export.
    from tfbert.hub import checkpoint as hub_checkpoint

    if hub_checkpoint.is_hub_handle(name_or_path):
        name_or_path = hub_checkpoint.resolve_handle(name_or_path)
    preset = presets.resolve_preset(name_or_path)
    if preset is not None:
        directory = preset.directory()
        if not preset.has_weights:
            vocab = find_vocabulary(directory) if directory else None
            return Checkpoint(name_or_path, "preset", preset.config, {}, vocab)
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
    if keras_hub_preset.is_preset(directory):
        config, weights = keras_hub_preset.read_preset(directory)
        checkpoint = Checkpoint(directory, "keras_hub", config, weights, vocab)
    elif hub_checkpoint.is_hub_saved_model(directory):
        config, weights, vocab, _ = hub_checkpoint.read_hub_checkpoint(
            directory)
        checkpoint = Checkpoint(directory, "tf_hub", config, weights, vocab)
    elif os.path.exists(os.path.join(directory, "config.json")):
        config = BertConfig.from_json_file(os.path.join(directory, "config.json"))
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


def _config_with(config, overrides):
    return dataclasses.replace(config, **overrides) if overrides else config


def load_encoder(name_or_path, strict=True, **config_overrides):
    """Builds a `BertEncoder` and loads a checkpoint into it (see
    `BertEncoder.from_pretrained`)."""
    from tfbert.models import BertEncoder

    checkpoint = read_checkpoint(name_or_path)
    encoder = BertEncoder(_config_with(checkpoint.config, config_overrides))
    if checkpoint.weights:
        assign_variables(encoder_variables(encoder),
                         weights_for(encoder, checkpoint.weights),
                         checkpoint.source, strict=strict)
    return encoder


def weights_for(encoder, weights):
    """`weights` less the pooler's when `encoder` was built without one."""
    if encoder.pooler is not None:
        return weights
    return {name: value for name, value in weights.items()
            if not name.startswith(POOLER_PREFIX)}


def load_pretrainer(name_or_path, strict=False, **config_overrides):
    """Builds a `BertPretrainer`, loading the encoder and, when the checkpoint
    has them, the masked-LM and sentence heads. The encoder is always
    loaded strictly; `strict` extends that to the heads. Any family's HF
    checkpoint (`tfbert.Encoder.from_pretrained` reads it) works; a family
    preset without weights gives a randomly initialised model."""
    from tfbert.models import BertEncoder, BertPretrainer
    from tfbert.models.encoder import (
        Encoder, family_of, load_family_pretrainer)

    if family_of(name_or_path) is not None:
        if os.path.isdir(name_or_path):
            return load_family_pretrainer(name_or_path, strict=strict,
                                          **config_overrides)
        return BertPretrainer(Encoder.from_pretrained(name_or_path,
                                                      **config_overrides))
    checkpoint = read_checkpoint(name_or_path)
    pretrainer = BertPretrainer(
        BertEncoder(_config_with(checkpoint.config, config_overrides)))
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
                from tfbert.text.bert_tokenizer import BertTokenizer

                BertTokenizer(list(vocabulary), lowercase=lowercase
                              ).save_pretrained(staging)
        publish_directory(staging, directory)


def save_encoder(encoder, directory, tokenizer=None, format="hf"):
    """Writes `encoder` (and `tokenizer`'s vocabulary) as a checkpoint that
    `BertEncoder.from_pretrained(directory)` reads back."""
    write_checkpoint(
        directory, encoder.config, read_variables(encoder_variables(encoder)),
        vocabulary=tokenizer.vocabulary if tokenizer is not None else None,
        lowercase=tokenizer.lowercase if tokenizer is not None else True,
        format=format)


def save_pretrainer(pretrainer, directory, tokenizer=None, format="hf"):
    """Writes the encoder and its pretraining heads: for BERT in any
    `format`, for the other families as their HF pretraining model
    (`Family.pretraining_class`, format "hf" only)."""
    from tfbert.models.encoder import FamilyEncoder, save_family_checkpoint

    if isinstance(pretrainer.encoder, FamilyEncoder):
        if format != "hf":
            raise ValueError(f"a {type(pretrainer.encoder).__name__} saves "
                             f"in HF's layout only, not {format!r}")
        heads = {name: value for name, value in
                 pretrainer_variables(pretrainer).items()
                 if name.startswith(HEAD_PREFIX)}
        save_family_checkpoint(pretrainer.encoder, directory, tokenizer,
                               heads=read_variables(heads))
        return
    write_checkpoint(
        directory, pretrainer.encoder.config,
        read_variables(pretrainer_variables(pretrainer)),
        vocabulary=tokenizer.vocabulary if tokenizer is not None else None,
        lowercase=tokenizer.lowercase if tokenizer is not None else True,
        format=format)
