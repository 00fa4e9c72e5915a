"""Reading a user's table of records: CSV, TSV or JSON Lines, by extension.

    for row in read_table("tickets.csv", required=("text", "label")):
        row.line, row["text"]

CSV and TSV files have a header line naming the columns and are read by the
`csv` module (quoted fields, doubled quotes, newlines inside quoted fields);
a TSV field may be quoted too. JSONL files hold one JSON object per line
(blank lines skipped); their values may be strings, numbers, booleans or
lists (a multi-label row). Files are UTF-8, with or without a byte-order
mark, with LF or CRLF line ends.

Every error names the file and line (`path:line`) and, where one is at
fault, the field; a missing column names the columns the file has.
"""

import csv
import dataclasses
import io
import json
import os

# File extension -> format.
FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl"}


@dataclasses.dataclass(frozen=True)
class Row:
    """One record of a table.

    Attributes:
      path: the file it came from.
      line: the 1-based line the record starts on (a quoted CSV field may
        continue on the next lines).
      values: column name -> value (str for CSV/TSV; any JSON value for
        JSONL).
    """

    path: str
    line: int
    values: dict

    @property
    def where(self):
        """`path:line`, for error messages."""
        return f"{self.path}:{self.line}"

    def __getitem__(self, column):
        return self.values[column]

    def get(self, column, default=None):
        return self.values.get(column, default)


def table_format(path):
    """"csv", "tsv" or "jsonl" from `path`'s extension (case-insensitive);
    raises ValueError naming the file for any other."""
    extension = os.path.splitext(str(path))[1].lower()
    if extension not in FORMATS:
        raise ValueError(f"{path}: unknown file type {extension or '(none)'!r}"
                         f"; expected one of {', '.join(sorted(FORMATS))}")
    return FORMATS[extension]


def read_table(path, required=()):
    """Reads every record of a CSV, TSV or JSONL file.

    Args:
      path: the file; its extension selects the format.
      required: column names every record must have (CSV/TSV: the header;
        JSONL: each object).

    Returns:
      A list of `Row`s, in file order.

    Raises:
      ValueError naming `path:line` for invalid UTF-8, a malformed CSV
      record or JSON line, a JSONL line that is not an object, a record
      with more or fewer fields than the header, or a missing column (with
      the columns the file has); naming the file for an unknown extension
      or a file without records. OSError for an unreadable file.
    """
    path = str(path)
    kind = table_format(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, expected a .{kind} "
                                "file")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: invalid UTF-8 at byte "
                         f"{error.start}") from None
    text = text.removeprefix("\ufeff")
    rows = (_jsonl_rows(path, text) if kind == "jsonl"
            else _delimited_rows(path, text, "," if kind == "csv" else "\t"))
    rows = list(rows)
    if not rows:
        raise ValueError(f"{path} has no records")
    for row in rows:
        missing = [c for c in required if c not in row.values]
        if missing:
            found = sorted(row.values)
            raise ValueError(f"{row.where}: no column "
                             f"{', '.join(map(repr, missing))} (the file has "
                             f"{', '.join(map(repr, found))})")
    return rows


def utf8_lines(path):
    """Yields `(line number, line)` of a UTF-8 file, 1-based, each line
    with its line ending and the first without a byte-order mark; invalid
    UTF-8 is a ValueError naming `path:line` and the byte."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"{path}:{number}: invalid UTF-8 at byte "
                                 f"{error.start}") from None
            yield number, line.lstrip("\ufeff") if number == 1 else line


def _delimited_rows(path, text, delimiter):
    """Yields the `Row`s of CSV/TSV `text` whose first record is the
    header."""
    # newline="" semantics: the csv module sees "\r\n" and embedded newlines.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter,
                        strict=True)
    header = None
    start = 1
    try:
        for fields in reader:
            line, start = start, reader.line_num + 1
            if not any(field.strip() for field in fields):
                continue
            if header is None:
                header = [name.strip() for name in fields]
                repeated = {n for n in header if header.count(n) > 1}
                if repeated:
                    raise ValueError(f"{path}:{line}: the header names "
                                     f"{sorted(repeated)} more than once")
                continue
            if len(fields) != len(header):
                raise ValueError(
                    f"{path}:{line}: {len(fields)} fields, the header "
                    f"({path}:1) has {len(header)}")
            yield Row(path, line, dict(zip(header, fields)))
    except csv.Error as error:
        raise ValueError(f"{path}:{reader.line_num}: {error}") from None


def _jsonl_rows(path, text):
    for line, record in enumerate(text.splitlines(), start=1):
        if not record.strip():
            continue
        try:
            value = json.loads(record)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{line}: not valid JSON "
                             f"({error.msg} at column {error.colno})") from None
        if not isinstance(value, dict):
            raise ValueError(f"{path}:{line}: expected a JSON object, found "
                             f"{json_type(value)}")
        yield Row(path, line, value)


def json_type(value):
    """The JSON name of a decoded value's type (`array`, `string`, ...)."""
    names = {dict: "an object", list: "an array", str: "a string",
             bool: "a boolean", int: "a number", float: "a number",
             type(None): "null"}
    return names[type(value)]
