"""Text classification examples from a user's CSV, TSV or JSONL file.

    columns = Columns(text_a="review", label="stars")
    train = read_examples("train.csv", columns, "single_label")
    labels = label_set(train, columns)          # sorted, at least two
    check_known_labels(read_examples("dev.csv", columns, "single_label"),
                       labels, columns)

Three kinds of label: "single_label" (one class per row, a string),
"regression" (a number) and "multi_label" (any number of classes per row,
joined by a separator, or a JSON list in JSONL; a row may have none). Every
error names `file:line` and the field (see `tfbert.data.table`).
"""

import dataclasses

import numpy as np

from tfbert.data.table import json_type, read_table

KINDS = ("single_label", "regression", "multi_label")
# A column holding a row id, written beside its predictions; without one,
# the row id is the record's line number.
ID_COLUMN = "id"


@dataclasses.dataclass(frozen=True)
class Columns:
    """Which columns hold the texts and the label (text_b None for
    single-text data)."""

    text_a: str
    text_b: str | None = None
    label: str = "label"

    @property
    def is_pair(self):
        return self.text_b is not None


@dataclasses.dataclass(frozen=True)
class Problem:
    """What a classifier learns from a table: its `columns`, its label
    `kind` (one of `KINDS`) and the classes in id order (None for
    regression). Read by `tfbert.tasks.glue.build_dataset` and
    `build_model` as a GLUE task's spec is."""

    columns: Columns
    kind: str
    labels: tuple | None

    @property
    def is_pair(self):
        return self.columns.is_pair

    @property
    def is_regression(self):
        return self.kind == "regression"

    @property
    def is_multi_label(self):
        return self.kind == "multi_label"

    @property
    def num_classes(self):
        return 1 if self.is_regression else len(self.labels)


@dataclasses.dataclass(frozen=True)
class Example:
    """One row.

    Attributes:
      row_id: the row's `id` column, else its line number (as str).
      where: `file:line` of the row, for error messages.
      text_a, text_b: the texts (text_b None for single-text data).
      label: str (single-label), float (regression), tuple of str
        (multi-label, possibly empty), or None for unlabeled rows.
    """

    row_id: str
    where: str
    text_a: str
    text_b: str | None
    label: object


def read_examples(path, columns, kind, *, labeled=True, label_separator=","):
    """Reads `Example`s from a CSV, TSV or JSONL file.

    Args:
      path: the file (its extension selects the format).
      columns: a `Columns`.
      kind: one of `KINDS`.
      labeled: False for prediction files (no label column needed).
      label_separator: joins a multi-label row's classes in a text field.

    Raises:
      ValueError naming file:line and field: a missing column (with the
      columns the file has), an empty or non-text text field, an empty
      single-label or regression label, a non-numeric regression value;
      plus what `tfbert.data.table.read_table` raises.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown label kind {kind!r}; one of {KINDS}")
    required = [c for c in (columns.text_a, columns.text_b) if c is not None]
    if labeled:
        required.append(columns.label)
    examples = []
    for row in read_table(path, required):
        texts = [None if column is None else _text(row, column)
                 for column in (columns.text_a, columns.text_b)]
        label = _label(row, columns.label, kind, label_separator) \
            if labeled else None
        row_id = row.get(ID_COLUMN)
        row_id = str(row.line) if row_id is None else str(row_id)
        examples.append(Example(row_id, row.where, texts[0], texts[1], label))
    return examples


def _text(row, column):
    value = row[column]
    if not isinstance(value, str):
        raise ValueError(f"{row.where}: field {column!r} is {json_type(value)}"
                         ", expected text")
    if not value.strip():
        raise ValueError(f"{row.where}: field {column!r} is empty")
    return value


def _label(row, column, kind, separator):
    value = row[column]
    if kind == "multi_label":
        if isinstance(value, str):
            parts = value.split(separator)
        elif isinstance(value, list):
            parts = value
        else:
            raise ValueError(f"{row.where}: field {column!r} is "
                             f"{json_type(value)}, expected labels joined by "
                             f"{separator!r} or a list")
        labels = []
        for part in parts:
            if not isinstance(part, str):
                raise ValueError(f"{row.where}: field {column!r} holds "
                                 f"{json_type(part)}, expected label strings")
            if part.strip() and part.strip() not in labels:
                labels.append(part.strip())
        return tuple(labels)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{row.where}: field {column!r} is "
                         f"{json_type(value)}, expected a label")
    text = str(value).strip()
    if not text:
        raise ValueError(f"{row.where}: field {column!r} is empty")
    if kind == "regression":
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{row.where}: field {column!r}: {text!r} is not "
                             "a number") from None
    return text


def label_set(examples, columns):
    """The sorted classes of the training `examples` (single- or
    multi-label). Raises ValueError naming the file when there are fewer
    than two."""
    found = set()
    for example in examples:
        found.update(example.label if isinstance(example.label, tuple)
                     else (example.label,))
    if len(found) < 2:
        path = examples[0].where.rsplit(":", 1)[0]
        raise ValueError(
            f"{path}: field {columns.label!r} has "
            + (f"one class only ({next(iter(found))!r})" if found
               else "no labels")
            + "; a classifier needs at least two")
    return tuple(sorted(found))


def check_known_labels(examples, labels, columns):
    """Raises ValueError naming file:line and field for a label of
    `examples` that is not in `labels` (the training set's classes)."""
    known = set(labels)
    for example in examples:
        values = (example.label if isinstance(example.label, tuple)
                  else (example.label,))
        for value in values:
            if value not in known:
                raise ValueError(
                    f"{example.where}: field {columns.label!r}: label "
                    f"{value!r} was not seen in training (labels: "
                    f"{', '.join(labels)})")


def multi_hot(examples, labels):
    """float32 [N, len(labels)]: 1 where a multi-label example has the
    class (zeros for unlabeled examples)."""
    ids = {label: i for i, label in enumerate(labels)}
    encoded = np.zeros((len(examples), len(labels)), np.float32)
    for row, example in enumerate(examples):
        for label in example.label or ():
            encoded[row, ids[label]] = 1
    return encoded
