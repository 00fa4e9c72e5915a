"""The CSV/TSV/JSONL table reader and the classification examples read from
it: real SST-2 rows written by Python's csv/json writers, and malformed
files."""

import csv
import json

import pytest

from tfbert.data import glue
from tfbert.data.classification import (Columns, check_known_labels,
                                        label_set, read_examples)
from tfbert.data.table import read_table, table_format


def _write_csv(path, header, rows, **options):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, **options)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_csv_of_real_sentences_round_trips(tmp_path, shared_data_dir):
    sst2 = glue.read_examples(glue.split_path(shared_data_dir / "glue",
                                              "sst2", "dev"), "sst2")[:200]
    rows = [(e.text_a, e.label) for e in sst2]
    # Quotes, commas and a newline inside a field, CRLF line ends.
    rows[0] = ('a "quoted", multi-line\nreview', "1")
    path = _write_csv(tmp_path / "dev.csv", ["review", "stars"], rows,
                      lineterminator="\r\n")
    examples = read_examples(path, Columns("review", label="stars"),
                             "single_label")
    assert [(e.text_a, e.label) for e in examples] == rows
    # Row ids are line numbers: the first record's field spans two lines.
    assert [e.row_id for e in examples[:3]] == ["2", "4", "5"]
    assert examples[1].where == f"{path}:4"


def test_bom_tsv_and_jsonl_read_alike(tmp_path):
    rows = [("good film", "pos"), ("dull, \"bad\"", "neg")]
    tsv = _write_csv(tmp_path / "a.tsv", ["text", "label"], rows,
                     delimiter="\t")
    tsv.write_bytes(b"\xef\xbb\xbf" + tsv.read_bytes())
    jsonl = tmp_path / "a.JSONL"
    jsonl.write_text("\n".join(json.dumps({"text": t, "label": y, "id": i})
                               for i, (t, y) in enumerate(rows)) + "\n\n")
    columns = Columns("text")
    from_tsv = read_examples(tsv, columns, "single_label")
    from_jsonl = read_examples(jsonl, columns, "single_label")
    assert [(e.text_a, e.label) for e in from_tsv] == rows
    assert [(e.text_a, e.label) for e in from_jsonl] == rows
    assert [e.row_id for e in from_jsonl] == ["0", "1"]
    assert label_set(from_tsv, columns) == ("neg", "pos")


def test_pairs_regression_and_multi_label(tmp_path):
    path = _write_csv(tmp_path / "p.csv", ["q", "a", "score", "tags"],
                      [("x", "y", " 0.5", "b,a"), ("z", "w", "3", "")])
    pair = Columns("q", "a", label="score")
    assert [(e.text_b, e.label) for e in read_examples(
        path, pair, "regression")] == [("y", 0.5), ("w", 3.0)]
    multi = read_examples(path, Columns("q", label="tags"), "multi_label")
    assert [e.label for e in multi] == [("b", "a"), ()]
    assert label_set(multi, Columns("q", label="tags")) == ("a", "b")
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_text(json.dumps({"t": "x", "y": ["a", "b"]}) + "\n"
                     + json.dumps({"t": "x", "y": "a|c"}) + "\n")
    assert [e.label for e in read_examples(
        jsonl, Columns("t", label="y"), "multi_label",
        label_separator="|")] == [("a", "b"), ("a", "c")]


def _error(path, *args, **kwargs):
    with pytest.raises(ValueError) as info:
        read_examples(path, *args, **kwargs)
    return str(info.value)


def test_errors_name_file_line_and_field(tmp_path):
    columns = Columns("text")
    path = _write_csv(tmp_path / "t.csv", ["text", "label"],
                      [("fine", "1"), ("  ", "0")])
    assert _error(path, columns, "single_label") == (
        f"{path}:3: field 'text' is empty")
    message = _error(path, Columns("review"), "single_label")
    assert message == (f"{path}:2: no column 'review' (the file has 'label', "
                       "'text')")
    path = _write_csv(tmp_path / "r.csv", ["text", "label"],
                      [("fine", "1"), ("ok", "high")])
    assert _error(path, columns, "regression") == (
        f"{path}:3: field 'label': 'high' is not a number")
    path.write_text("text,label\nfine,1,extra\n")
    assert _error(path, columns, "single_label") == (
        f"{path}:2: 3 fields, the header ({path}:1) has 2")
    path.write_text('text,label\n"unterminated,1\n')
    assert _error(path, columns, "single_label").startswith(f"{path}:")
    path.write_bytes(b"text,label\nfine,1\n\xff,0\n")
    assert _error(path, columns, "single_label") == (
        f"{path}:3: invalid UTF-8 at byte 18")
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text('{"text": "a", "label": "1"}\n["a", "1"]\n')
    assert _error(jsonl, columns, "single_label") == (
        f"{jsonl}:2: expected a JSON object, found an array")
    jsonl.write_text('{"text": "a", "label": "1"}\n{"text": 5, "label": 1}\n')
    assert _error(jsonl, columns, "single_label") == (
        f"{jsonl}:2: field 'text' is a number, expected text")
    jsonl.write_text('{"text": "a", "label": "1"}\n{"text": "a"\n')
    assert _error(jsonl, columns, "single_label").startswith(
        f"{jsonl}:2: not valid JSON")
    with pytest.raises(ValueError, match=r"t\.txt: unknown file type '\.txt'"):
        table_format(tmp_path / "t.txt")
    (tmp_path / "e.csv").write_text("text,label\n")
    with pytest.raises(ValueError, match="has no records"):
        read_table(tmp_path / "e.csv")


def test_label_set_and_unknown_labels(tmp_path):
    columns = Columns("text")
    train = _write_csv(tmp_path / "train.csv", ["text", "label"],
                       [("a", "x"), ("b", "x")])
    with pytest.raises(ValueError, match=f"{train}: field 'label' has one "
                       "class only \\('x'\\)"):
        label_set(read_examples(train, columns, "single_label"), columns)
    dev = _write_csv(tmp_path / "dev.csv", ["text", "label"],
                     [("a", "x"), ("b", "z")])
    with pytest.raises(ValueError) as info:
        check_known_labels(read_examples(dev, columns, "single_label"),
                           ("x", "y"), columns)
    assert str(info.value) == (f"{dev}:3: field 'label': label 'z' was not "
                               "seen in training (labels: x, y)")
