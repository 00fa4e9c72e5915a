"""`tfbert-query` (`tfbert_cli.query`) answers for every export kind."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tfbert_cli import query

# Every test queries the SavedModels a session fixture exports first (the
# `exports` fixture, ~45 s on a busy machine).
pytestmark = pytest.mark.slow

QUERIES = {
    "classifier": {"sentence1": ["He left.", "Fine."],
                   "sentence2": ["He went away.", "Bad."]},
    "regressor": {"sentence": ["A fine film."]},
    "squad": {"question": ["Who won?", "Where?"],
              "context": ["Ann won the race in Paris.", ""]},
    "ner": {"text": ["John Smith lives in Paris.", "x"]},
}


@pytest.mark.parametrize("kind", sorted(QUERIES))
def test_every_export_kind_is_queried_by_its_signature_inputs(
        kind, exports, capsys):
    base = os.path.dirname(exports[kind])
    argv = [base]
    for name, texts in QUERIES[kind].items():
        for text in texts:
            argv += [f"--{name}", text]
    query.main(argv)
    lines = capsys.readouterr().out.strip().splitlines()
    printed = [json.loads(line) for line in lines]

    served = tf.saved_model.load(exports[kind]).signatures["serving_default"](
        **{name: tf.constant(texts) for name, texts in QUERIES[kind].items()})
    assert len(printed) == len(next(iter(QUERIES[kind].values())))
    for index, line in enumerate(printed):
        assert list(line) == ["index", "inputs", "outputs"]
        assert line["index"] == index
        assert line["inputs"] == {name: texts[index] for name, texts in
                                  sorted(QUERIES[kind].items())}
        assert list(line["inputs"]) == sorted(QUERIES[kind])
        example = line["outputs"]
        assert list(example) == sorted(served)
        for name in ("label", "answer_text"):
            if name in served:
                assert example[name] == served[name][index].numpy().decode()
        if "num_words" in served:
            n = int(served["num_words"][index])
            assert example["word_labels"] == [
                t.decode() for t in served["word_labels"][index][:n].numpy()]


def test_a_token_id_signature_is_refused_with_a_clear_message(exports,
                                                              capsys):
    with pytest.raises(SystemExit):
        query.main([exports["ner"], "--signature", "serve_token_ids"])
    assert "is int32; this tool sends text only" in capsys.readouterr().err


def test_positional_texts_fill_a_single_text_input(exports, capsys):
    query.main([exports["ner"], "John lives in Paris.", "--text", "x"])
    printed = [json.loads(line)
               for line in capsys.readouterr().out.strip().splitlines()]
    assert [p["outputs"]["word_texts"] for p in printed] == [
        ["x"], ["John", "lives", "in", "Paris", "."]]
    with pytest.raises(SystemExit):
        query.main([exports["squad"], "Who?", "Me."])
    assert "give each as an option" in capsys.readouterr().err


def _refused(argv, capsys):
    """stderr of a `query.main(argv)` that must exit with status 2."""
    with pytest.raises(SystemExit) as exit_info:
        query.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("tfbert-query: error: ")
    return err


@pytest.mark.parametrize("layout, message", [
    ("missing", "no such file or directory"),
    ("file", "is a file, not an export directory"),
    ("empty", "is not a SavedModel (no saved_model.pb)"),
    ("not_a_saved_model", "is not a SavedModel (no saved_model.pb)"),
    ("staging_only", "holds no finished version, only .tmp-export-"),
    ("empty_version", "is not a SavedModel (no saved_model.pb)"),
])
def test_a_path_that_is_no_export_is_one_line(layout, message, tmp_path,
                                              capsys):
    path = tmp_path / "model"
    if layout == "file":
        path.write_text("not a model")
    elif layout != "missing":
        path.mkdir()
    if layout == "not_a_saved_model":
        (path / "variables").mkdir()
        (path / "notes.txt").write_text("x")
    elif layout == "staging_only":
        (path / ".tmp-export-host.123.abc" / "variables").mkdir(parents=True)
    elif layout == "empty_version":
        (path / "3").mkdir()
    assert message in _refused([str(path), "some text"], capsys)


@pytest.mark.parametrize("kind, argv, message", [
    ("classifier", ["--sentence1", "a", "--sentence1", "b", "--sentence2",
                    "c"], "--sentence1 was given 2 times, --sentence2 was "
                          "given 1 time"),
    ("squad", ["--question", "Who?"], "give --context"),
    ("ner", ["--text", "caf\udce9"], r"--text value 1 ('caf\\xe9') is not "
                                    "valid UTF-8"),
    ("ner", ["--signature", "nope", "x"], "has no signature 'nope'"),
])
def test_bad_arguments_are_one_line(kind, argv, message, exports, capsys):
    assert message in _refused([exports[kind], *argv], capsys)


def test_a_request_over_the_exports_bound_is_one_line(exports, capsys):
    err = _refused([exports["ner"], "x" * 10_001], capsys)
    assert "the model refused the request" in err
    assert "input text has a text over the bound of 10000" in err


def test_non_finite_outputs_are_written_as_null(capsys):
    non_finite = set()
    example = query.example_outputs(
        {"probabilities": np.array([[np.nan, 0.5], [np.inf, -np.inf]]),
         "label": np.array([b"neg", b"pos"])}, 1, non_finite)
    assert example == {"label": "pos", "probabilities": [None, None]}
    assert non_finite == {"probabilities"}
    assert json.loads(json.dumps(example, allow_nan=False)) == example


def test_the_script_imports_only_tensorflow_and_tensorflow_text(exports):
    """Run as a file (as `make demo` runs it, like a TF Serving host would
    load the export), the query script imports no tfbert module."""
    probe = ("import runpy, sys; sys.argv = sys.argv[1:]; "
             "runpy.run_path(sys.argv[0], run_name='__main__')")
    script = os.path.abspath(query.__file__)
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", probe, script,
         exports["classifier"], "--sentence1", "a", "--sentence2", "b"],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-2000:]
    imported = [line.split("|")[-1].strip() for line in
                result.stderr.splitlines() if line.startswith("import time:")]
    assert "tensorflow_text" in imported
    assert not [name for name in imported if name.startswith("tfbert")]
