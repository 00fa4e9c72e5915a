"""GLUE readers on the real files and on malformed ones."""

import pytest

from tfbert.data import glue

# Row counts published for these GLUE files (see shared/data/README.md).
COUNTS = {("sst2", "train"): 67349, ("sst2", "dev"): 872,
          ("cola", "train"): 8551, ("cola", "dev"): 1043,
          ("mrpc", "train"): 3668, ("mrpc", "dev"): 408,
          ("stsb", "train"): 5749, ("stsb", "dev"): 1500,
          ("rte", "train"): 2490}


@pytest.mark.parametrize("task,split", sorted(COUNTS))
def test_reads_real_files(shared_data_dir, task, split):
    examples = glue.read_examples(
        glue.split_path(shared_data_dir / "glue", task, split), task)
    assert len(examples) == COUNTS[task, split]
    spec = glue.get_task(task)
    assert all(e.text_a for e in examples)
    assert all((e.text_b is not None) == spec.is_pair for e in examples)


def test_quirks(shared_data_dir):
    data = shared_data_dir / "glue"
    mrpc = glue.read_examples(glue.split_path(data, "mrpc", "train"), "mrpc")
    # The BOM is not part of the header; quotes stay in the text.
    assert any('"' in e.text_a for e in mrpc)
    cola = glue.read_examples(glue.split_path(data, "cola", "dev"), "cola")
    assert {e.label for e in cola} == {"0", "1"}
    assert sum(e.label == "1" for e in cola) == 721
    stsb = glue.read_examples(glue.split_path(data, "stsb", "dev"), "stsb")
    assert all(0.0 <= float(e.label) <= 5.0 for e in stsb)
    rte = glue.read_examples(glue.split_path(data, "rte", "train"), "rte")
    assert sum(e.label == "entailment" for e in rte) == 1249


def _write(tmp_path, text, name="train.tsv"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize("content,message", [
    ("sentence\tlabel\ngood\t1\nbad\n", ":3: expected 2 tab-separated fields"),
    ("sentence\tlabel\ngood\t1\nbad\tmaybe\n", ":3: field 'label': unknown label 'maybe'"),
    ("sentence\tlabel\n \t1\n", ":2: field 'sentence' is empty"),
    (b"sentence\tlabel\ngood\t1\nb\xffd\t0\n", ":3: invalid UTF-8"),
    ("sentence\tlabel\n", " has no examples (only a header line)"),
    ("sentence\tlabel\n\n  \n", " has no examples (only a header line)"),
    ("", " has no examples (the file is empty)"),
])
def test_malformed_rows_name_file_and_line(tmp_path, content, message):
    path = _write(tmp_path, content)
    with pytest.raises(ValueError) as error:
        glue.read_examples(path, "sst2")
    assert str(path) + message in str(error.value)


@pytest.mark.parametrize("content,message", [
    ("", "has no examples"),
    ("\n\n", "has no examples"),
    ("gj04\t1\t\tFine.\ngj04\t1\t\tExtra\ttab.\n",
     ":2: expected 4 tab-separated fields, found 5"),
    ("gj04\t1\tFine.\n", ":1: expected 4 tab-separated fields, found 3"),
])
def test_headerless_cola_checks_rows_and_emptiness(tmp_path, content, message):
    path = _write(tmp_path, content)
    with pytest.raises(ValueError) as error:
        glue.read_examples(path, "cola")
    assert str(error.value).startswith(str(path))
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_directory_instead_of_file_is_named(tmp_path):
    directory = tmp_path / "train.tsv"
    directory.mkdir()
    with pytest.raises(IsADirectoryError, match="train.tsv: is a directory"):
        glue.read_examples(directory, "sst2")


def test_stsb_score_must_be_numeric(tmp_path):
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    path = _write(tmp_path, header + "0\tg\tf\t2012\t1\ts\ts\ta\tb\tfive\n")
    with pytest.raises(ValueError, match=r":2: field 'score': 'five' is not a number"):
        glue.read_examples(path, "stsb")


def test_missing_file_and_unknown_task(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        glue.read_examples(tmp_path / "nope.tsv", "sst2")
    with pytest.raises(ValueError, match="unknown GLUE task"):
        glue.get_task("squad")


def test_mnli_layout_and_test_files(tmp_path):
    header = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\t"
              "sentence2_binary_parse\tsentence1_parse\tsentence2_parse\t"
              "sentence1\tsentence2\tlabel1\tgold_label\n")
    row = "0\t1\t1e\tfiction\t(\t(\t(\t(\tA man sleeps.\tA person rests.\tentailment\tentailment\n"
    path = _write(tmp_path, header + row, "dev_matched.tsv")
    [example] = glue.read_examples(path, "mnli")
    assert (example.text_a, example.text_b, example.label) == (
        "A man sleeps.", "A person rests.", "entailment")
    test = _write(tmp_path, "index\tsentence1\tsentence2\n7\tA\tB\n", "test.tsv")
    [example] = glue.read_examples(test, "rte", labeled=False)
    assert (example.guid, example.label) == ("7", None)
    assert glue.get_task("mnli").dev_splits == ("dev_matched", "dev_mismatched")
