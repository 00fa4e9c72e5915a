"""Reading multiple-choice examples: SWAG's CSV layout or JSONL.

SWAG CSV (a header line): `sent1` is the context; each choice is
`sent2 + " " + ending<i>` for i in [0, num_choices), as HF's run_swag.py
builds them; `label` is the index of the right ending. JSONL: one object
per line with `context` (str), `choices` (list of str) and `label` (int).
Errors are `ValueError`s naming the file and line. `pack_choices` packs the
(context, choice) pairs in-graph, for training and exports alike.
"""

import csv
import dataclasses
import json
import os

import tensorflow as tf

from tfbert.data.table import utf8_lines
from tfbert_config.files import check_input_file


@dataclasses.dataclass(frozen=True)
class MultipleChoiceExample:
    """One question.

    Attributes:
      guid: "<file>:<line>".
      context: the text every choice is paired with.
      choices: tuple of num_choices str.
      label: index of the right choice, or None (unlabeled).
    """

    guid: str
    context: str
    choices: tuple
    label: int | None


def read_examples(path, num_choices=4, labeled=True):
    """The examples of a `.csv` (SWAG) or `.jsonl` file.

    Args:
      path: the file.
      num_choices: choices every example must have.
      labeled: whether every example must have a label in
        [0, num_choices); unlabeled files may leave it out.

    Raises:
      FileNotFoundError / IsADirectoryError: `path` is not a file.
      ValueError: another suffix, a missing column or field, a row with
        another number of choices, a label out of range, or no examples;
        naming `path:line`.
    """
    path = os.fspath(path)
    check_input_file(path, "a multiple-choice .csv or .jsonl file")
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".csv":
        rows = _swag_rows(path, num_choices)
    elif suffix == ".jsonl":
        rows = _jsonl_rows(path)
    else:
        raise ValueError(f"{path}: expected a .csv (SWAG layout) or .jsonl "
                         "file")
    examples = []
    for number, context, choices, label in rows:
        where = f"{path}:{number}"
        if len(choices) != num_choices:
            raise ValueError(f"{where}: {len(choices)} choices, expected "
                             f"{num_choices} (`num_choices`)")
        for value in (context, *choices):
            if not isinstance(value, str):
                raise ValueError(f"{where}: context and choices must be "
                                 f"strings, got {type(value).__name__}")
        examples.append(MultipleChoiceExample(
            where, context, tuple(choices),
            _label(where, label, num_choices, labeled)))
    if not examples:
        raise ValueError(f"{path} has no examples")
    return examples


def _label(where, label, num_choices, labeled):
    if label is None or label == "":
        if labeled:
            raise ValueError(f"{where}: no label")
        return None
    try:
        value = int(label)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: label {label!r} is not an integer"
                         ) from None
    if isinstance(label, bool) or str(value) != str(label).strip() or not (
            0 <= value < num_choices):
        raise ValueError(f"{where}: label {label!r} is not a choice index in "
                         f"[0, {num_choices})")
    return value


def _swag_rows(path, num_choices):
    lines = utf8_lines(path)
    reader = csv.DictReader(line for _, line in lines)
    header = reader.fieldnames or []
    needed = ["sent1", "sent2"] + [f"ending{i}" for i in range(num_choices)]
    missing = [name for name in needed if name not in header]
    if missing:
        raise ValueError(f"{path}:1: header has no column "
                         f"{', '.join(missing)} (`num_choices`={num_choices}"
                         " needs ending0..ending"
                         f"{num_choices - 1})")
    extra = sorted(name for name in header if name.startswith("ending")
                   and name not in needed)
    if extra:
        raise ValueError(f"{path}:1: columns {', '.join(extra)} beyond "
                         f"`num_choices`={num_choices}")
    for row in reader:
        number = reader.line_num
        if None in row or None in row.values():
            raise ValueError(f"{path}:{number}: expected {len(header)} "
                             "comma-separated fields")
        endings = [row[f"ending{i}"] for i in range(num_choices)]
        filled = sum(bool(ending.strip()) for ending in endings)
        if filled != num_choices:
            raise ValueError(f"{path}:{number}: {filled} non-empty endings, "
                             f"expected {num_choices}")
        choices = [f"{row['sent2']} {ending}".strip() for ending in endings]
        yield number, row["sent1"], choices, row.get("label")


def _jsonl_rows(path):
    for number, line in utf8_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: invalid JSON: {error.msg}"
                             ) from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object")
        for key in ("context", "choices"):
            if key not in row:
                raise ValueError(f"{path}:{number}: no field {key!r}")
        if not isinstance(row["choices"], list):
            raise ValueError(f"{path}:{number}: field 'choices' must be a "
                             "list of strings")
        yield number, row["context"], row["choices"], row.get("label")


def pack_choices(preprocessor, contexts, choices):
    """Packs every (context, choice) pair.

    Args:
      preprocessor: the family's preprocessor.
      contexts: tf.string [batch].
      choices: tf.string [batch, num_choices].

    Returns:
      dict of int32 [batch, num_choices, seq].
    """
    num_choices = tf.shape(choices)[1]
    flat = preprocessor((tf.repeat(contexts, num_choices),
                         tf.reshape(choices, [-1])))
    return {name: tf.reshape(value, [-1, num_choices, tf.shape(value)[-1]])
            for name, value in flat.items()}
