"""The family registry: one entry per encoder family, keyed by `model_type`.

A family is one module (`tfbert/models/<family>_encoder.py`) that calls
`register(Family(...))` with everything that makes the family itself: its
encoder class, its tokenizer and packing layout (by name: `tfbert.text`
holds them, and the numeric models import no TensorFlow), and how its HF
checkpoints are named (`config.json` keys, weight names, the prefix its task
models use, its pretraining model). Its presets are the `tfbert.presets`
entries with its `model_type`. The checkpoint readers and writers
(`tfbert.checkpoints`), the preprocessors (`tfbert.text`) and the encoders
(`tfbert.models`) read the family from here; "which family is this preset or
directory?" is answered by `model_type_of` and nowhere else. Importing
`tfbert` registers every family.
"""

import dataclasses
import os
import re
from collections.abc import Callable

from tfbert import presets
from tfbert.utils.json_file import read_json

# The checkpoint layouts `tfbert.checkpoints.write_checkpoint` writes.
FORMATS = ("hf", "tf1", "keras_hub")


@dataclasses.dataclass(frozen=True)
class Family:
    """Everything tfbert knows about one encoder family.

    Attributes:
      model_type: the `model_type` of the family's HF `config.json`.
      encoder_class: the `BertEncoder` subclass to build.
      tokenizer: the class name of its in-graph tokenizer in `tfbert.text`
        (`"BertTokenizer"` families get a `BertPreprocessor`).
      layout: the name of its `PackingLayout` in
        `tfbert.text.packing_layout.LAYOUTS` (`"bert"`, `"roberta"`).
      config_from_hf: HF `config.json` dict -> `BertConfig`.
      config_to_hf: `BertConfig` -> the family's HF `config.json` dict;
        None for BERT, whose checkpoints every format's writer writes.
      hf_prefix: prefix of the encoder's weights inside the family's task
        models (`"distilbert."`); a bare HF model has none.
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
      formats: the checkpoint layouts it is written in (BERT: all of
        `FORMATS`; the others HF's only).
    """

    model_type: str
    encoder_class: type
    tokenizer: str
    layout: str
    config_from_hf: Callable
    config_to_hf: Callable | None
    hf_prefix: str
    renames: tuple = ()
    inverse_renames: tuple = ()
    pretraining_class: str = ""
    head_prefixes: tuple = ()
    formats: tuple = ("hf",)

    @property
    def presets(self):
        """Names of the family's presets (`tfbert.presets.PRESETS`)."""
        return tuple(sorted(name for name, preset in presets.PRESETS.items()
                            if preset.model_type == self.model_type))

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


_REGISTRY = {}


def register(family):
    """Adds `family` to the registry (by its `model_type`); returns it."""
    _REGISTRY[family.model_type] = family
    return family


def model_types():
    """The registered `model_type`s, "bert" first."""
    return tuple(sorted(_REGISTRY, key=lambda name: (name != "bert", name)))


def get(model_type):
    """The registered `Family` of `model_type` (KeyError if none)."""
    return _REGISTRY[model_type]


def of_encoder_class(encoder_class):
    """The `Family` of an encoder class (of the nearest registered class it
    derives from)."""
    matches = [family for family in _REGISTRY.values()
               if issubclass(encoder_class, family.encoder_class)]
    if not matches:
        raise ValueError(f"{encoder_class.__name__} is no registered family's "
                         "encoder")
    return max(matches, key=lambda family: len(family.encoder_class.__mro__))


def checked_model_type(values, config_path):
    """The `model_type` of a read `config.json` dict: "bert" when it has
    none; a one-line error naming `config_path` when no family has it."""
    model_type = values.get("model_type", "bert")
    if model_type not in _REGISTRY:
        raise ValueError(
            f"{config_path}: model_type {model_type!r} is not a known "
            f"encoder family; known: {', '.join(model_types())}")
    return model_type


def model_type_of(name_or_path):
    """The `model_type` of a preset name or checkpoint directory, read
    without loading weights: the preset's, or the directory's `config.json`
    one ("bert" for a directory without one: Google TF1, keras-hub, TF Hub
    layouts, and for anything else the checkpoint readers will reject)."""
    path = os.fspath(name_or_path)
    preset = presets.get_preset(path)
    if preset is not None:
        return preset.model_type
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        return "bert"
    return checked_model_type(read_json(config_path), config_path)


def family_of(name_or_path):
    """The registered `Family` of a preset name or checkpoint directory
    (see `model_type_of`)."""
    return get(model_type_of(name_or_path))
