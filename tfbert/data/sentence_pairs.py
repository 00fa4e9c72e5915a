"""Reading sentence-pair files for training and evaluating embeddings.

A file is TSV, CSV or JSONL, chosen by its extension (.tsv, .csv,
.jsonl / .json); TSV and CSV have a header row naming the columns (TSV is
read without quoting, as GLUE's files are written), JSONL has one object per
line. Every row gives a text pair (columns named by the caller), optionally a
negative text and a label: a score (divided by `score_scale`) or 0/1.
"""

import csv
import dataclasses
import json
import os

import numpy as np

FORMATS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}


@dataclasses.dataclass
class SentencePairs:
    """The rows of a sentence-pair file.

    Attributes:
      path: the file read.
      texts_a, texts_b: lists of str, one per row.
      texts_negative: list of str, or None without a negative column.
      labels: float32 np.ndarray [rows] (scores divided by the scale), or
        None without a label column.
    """

    path: str
    texts_a: list
    texts_b: list
    texts_negative: list | None
    labels: np.ndarray | None

    def __len__(self):
        return len(self.texts_a)

    @property
    def columns(self):
        """The text columns, in order: (a, b) or (a, b, negative)."""
        return ((self.texts_a, self.texts_b) if self.texts_negative is None
                else (self.texts_a, self.texts_b, self.texts_negative))

    @property
    def binary(self):
        """Whether every label is 0 or 1 (pair classification)."""
        return self.labels is not None and bool(np.all(
            (self.labels == 0) | (self.labels == 1)))


def _rows(path):
    """Yields `(line number, {column: value})` of the file's rows."""
    kind = FORMATS.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise ValueError(f"{path}: unknown file type; expected one of "
                         f"{', '.join(sorted(FORMATS))}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, encoding="utf-8-sig", newline="") as f:
        try:
            if kind == "jsonl":
                for number, line in enumerate(f, start=1):
                    if not line.strip():
                        continue
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError as error:
                        raise ValueError(f"{path}:{number}: not JSON: "
                                         f"{error.msg}") from None
                    if not isinstance(row, dict):
                        raise ValueError(f"{path}:{number}: expected a JSON "
                                         "object")
                    yield number, row
                return
            reader = (csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
                      if kind == "tsv" else csv.reader(f))
            header = next(reader, None)
            if header is None:
                return
            for fields in reader:
                if not any(field.strip() for field in fields):
                    continue
                if len(fields) != len(header):
                    raise ValueError(
                        f"{path}:{reader.line_num}: expected {len(header)} "
                        f"fields (the header's), found {len(fields)}")
                yield reader.line_num, dict(zip(header, fields))
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}: invalid UTF-8 at byte {error.start}"
                             ) from None


def read_sentence_pairs(path, text_a_column, text_b_column,
                        text_negative_column=None, label_column=None,
                        score_scale=1.0):
    """Reads a sentence-pair file.

    Args:
      path: a .tsv, .csv or .jsonl file.
      text_a_column, text_b_column: the pair's columns.
      text_negative_column: a hard negative's column, or None.
      label_column: the label's column (a number), or None.
      score_scale: labels are divided by it, and must lie in
        [0, score_scale] (e.g. 5 for STS-B's 0-5 scores).

    Returns:
      `SentencePairs`.

    Raises:
      ValueError naming the file and column (a missing column) or file:line
      (an empty text, a label that is not a number or outside the scale),
      or the file when it has no rows.
    """
    path = os.fspath(path)
    wanted = [c for c in (text_a_column, text_b_column, text_negative_column)
              if c is not None]
    texts = {column: [] for column in wanted}
    labels = []
    for number, row in _rows(path):
        for column in wanted + ([label_column] if label_column else []):
            if column not in row:
                raise ValueError(f"{path}:{number}: no column {column!r} "
                                 f"(columns: {', '.join(map(str, row))})")
        for column in wanted:
            value = row[column]
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{path}:{number}: column {column!r} is "
                                 "empty" if isinstance(value, str) else
                                 f"{path}:{number}: column {column!r} is not "
                                 "text")
            texts[column].append(value)
        if label_column:
            try:
                label = float(row[label_column])
            except (TypeError, ValueError):
                raise ValueError(f"{path}:{number}: column {label_column!r} "
                                 f"is not a number: {row[label_column]!r}"
                                 ) from None
            if not 0 <= label <= score_scale:
                raise ValueError(f"{path}:{number}: column {label_column!r} "
                                 f"is {label:g}, outside the scale [0, "
                                 f"{score_scale:g}] (`score_scale`)")
            labels.append(label / score_scale)
    if not texts[text_a_column]:
        raise ValueError(f"{path} has no examples")
    return SentencePairs(
        path=path, texts_a=texts[text_a_column],
        texts_b=texts[text_b_column],
        texts_negative=(texts[text_negative_column] if text_negative_column
                        else None),
        labels=np.asarray(labels, np.float32) if label_column else None)
