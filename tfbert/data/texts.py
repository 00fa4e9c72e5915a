"""Reading texts to encode: one per line, `A ||| B` pairs, or a column of a
CSV, TSV or JSONL file.

Errors are `ValueError`s naming the file and line (and the column).
"""

import csv
import json
import os

from tfbert.data.table import utf8_lines
from tfbert_config.files import check_input_file

# Separates the two segments of a pair on a line of a plain text file (as in
# Google BERT's extract_features.py).
PAIR_SEPARATOR = " ||| "
# Extension -> field delimiter of the files read with a header line.
DELIMITERS = {".csv": ",", ".tsv": "\t"}


def read_texts(path, text_column="text", text_pair_column=None):
    """The texts of `path`, in file order.

    `.csv` and `.tsv` files are read with a header line, `.jsonl` files as
    one JSON object per line; all take the text from `text_column` and,
    when given, the second segment from `text_pair_column`. Any other file has one text
    per line, or `A ||| B` for a pair (an empty line is an empty text).

    Returns:
      list of str, or of (str, str) for pairs, one per input line.

    Raises:
      FileNotFoundError / IsADirectoryError: `path` is not a file.
      ValueError: invalid UTF-8, a row without the column, a value that is
        not a string, or no texts; naming `path:line`.
    """
    path = os.fspath(path)
    check_input_file(path, "a file of texts")
    suffix = os.path.splitext(path)[1].lower()
    if suffix in DELIMITERS:
        texts = _column_texts(path, _csv_rows(path, DELIMITERS[suffix]),
                              text_column, text_pair_column)
    elif suffix == ".jsonl":
        texts = _column_texts(path, _jsonl_rows(path), text_column,
                              text_pair_column)
    else:
        texts = [_line_text(line) for _, line in _lines(path)]
    if not texts:
        raise ValueError(f"{path} has no texts")
    return texts


def _lines(path):
    """(line number, line without its line ending) of a UTF-8 file."""
    for number, line in utf8_lines(path):
        yield number, line.rstrip("\r\n")


def _line_text(line):
    if PAIR_SEPARATOR in line:
        first, second = line.split(PAIR_SEPARATOR, 1)
        return first, second
    return line


def _csv_rows(path, delimiter):
    """(line number, dict) per CSV/TSV record after the header."""
    lines = dict(_lines(path))
    reader = csv.DictReader((lines[n] for n in sorted(lines)),
                            delimiter=delimiter)
    for row in reader:
        yield reader.line_num, row


def _jsonl_rows(path):
    """(line number, dict) per non-empty JSONL line."""
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{number}: invalid JSON: {error.msg}"
                             ) from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object, got "
                             f"{type(row).__name__}")
        yield number, row


def _column_texts(path, rows, text_column, text_pair_column):
    texts = []
    for number, row in rows:
        values = []
        for column in (text_column, text_pair_column):
            if column is None:
                continue
            value = row.get(column)
            if value is None:
                raise ValueError(f"{path}:{number}: no column {column!r}")
            if not isinstance(value, str):
                raise ValueError(f"{path}:{number}: column {column!r} is a "
                                 f"{type(value).__name__}, expected a string")
            values.append(value)
        texts.append(values[0] if len(values) == 1 else tuple(values))
    return texts
