"""`python -m tasks.ner` end to end on a few real sentences, tiny model."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import numpy as np
from seqeval import metrics as seqeval

from tfbert.config import BertConfig
from tfbert.data.conll import read_conll
from tfbert.models import BertEncoder
from tfbert.text import BertTokenizer

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, shared_data_dir, minilm_dir):
    root = tmp_path_factory.mktemp("ner")
    lines = (shared_data_dir / "conll2003" / "train.txt").read_text(
        encoding="utf-8").splitlines(keepends=True)
    (root / "train.txt").write_text("".join(lines[:150]), encoding="utf-8")
    (root / "valid.txt").write_text("".join(lines[150:260]), encoding="utf-8")
    tokenizer = BertTokenizer.from_pretrained(minilm_dir)
    BertEncoder(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32,
                           num_layers=2, num_heads=2, intermediate_size=64)
                ).save_pretrained(root / "ckpt", tokenizer=tokenizer)
    return root


def _read_predictions(path):
    sentences, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line:
            sentences.append(current)
            current = []
            continue
        token, gold, predicted = line.split(" ")
        current.append((token, gold, predicted))
    assert not current  # every sentence ends with a blank line
    return sentences


@pytest.mark.parametrize("use_crf", [False, True])
def test_ner_task_end_to_end(workdir, use_crf):
    model_dir = workdir / f"model_crf_{use_crf}"
    command = [
        sys.executable, "-m", "tasks.ner",
        f"--train_file={workdir / 'train.txt'}",
        f"--eval_file={workdir / 'valid.txt'}",
        f"--init_checkpoint={workdir / 'ckpt'}", f"--model_dir={model_dir}",
        "--do_train", "--do_eval", "--max_seq_length=16",
        "--train_batch_size=8", "--num_train_epochs=1",
        f"--use_crf={str(use_crf).lower()}", "--mixed_precision=none"]
    if use_crf:
        command.append(f"--export_dir={workdir / 'export'}")
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]

    gold_sentences = read_conll(workdir / "valid.txt")
    written = _read_predictions(model_dir / "predictions.txt")
    assert [[w for w, _, _ in s] for s in written] == [
        s.words for s in gold_sentences]
    assert [[g for _, g, _ in s] for s in written] == [
        s.tags for s in gold_sentences]
    results = json.loads((model_dir / "eval_results.json").read_text())
    predicted = [[p for _, _, p in s] for s in written]
    gold = [s.tags for s in gold_sentences]
    assert results["f1"] == pytest.approx(seqeval.f1_score(gold, predicted),
                                          abs=1e-12)
    assert results["accuracy"] == pytest.approx(
        seqeval.accuracy_score(gold, predicted), abs=1e-12)
    assert results["num_windows"] > results["num_sentences"]  # long ones split
    if use_crf:
        assert (workdir / "export" / "1" / "saved_model.pb").exists()


def test_unknown_eval_tag_names_file_and_line(workdir):
    bad = workdir / "bad.txt"
    bad.write_text("Paris NNP B-NP B-GPE\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "tasks.ner", f"--eval_file={bad}",
         "--labels=O,B-LOC,I-LOC", f"--init_checkpoint={workdir / 'ckpt'}",
         f"--model_dir={workdir / 'unused'}", "--do_eval"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert f"{bad}:1: tag 'B-GPE'" in result.stderr


def _columns(lines):
    """The whitespace columns of each token line."""
    return [line.split() for line in lines
            if line.split() and line.split()[0] != "-DOCSTART-"]


def test_pos_tagging_beats_the_most_frequent_tag(tmp_path, shared_data_dir,
                                                 tiny_checkpoint):
    """POS tags (column 1 of CoNLL-2003) as plain tags: trained on a slice
    of train, scored on a slice of valid; the written predictions give the
    reported accuracy when recomputed with numpy."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the export's tokenizer ops)

    from tests.tasks.conftest import run_task
    from tfbert.tasks.ner import NerTask

    data = shared_data_dir / "conll2003"
    train = (data / "train.txt").read_text(encoding="utf-8").splitlines()[:3000]
    valid = (data / "valid.txt").read_text(encoding="utf-8").splitlines()[:800]
    (tmp_path / "train.txt").write_text("\n".join(train) + "\n")
    (tmp_path / "valid.txt").write_text("\n".join(valid) + "\n")
    model_dir = tmp_path / "model"
    run_task(NerTask, [
        f"--train_file={tmp_path / 'train.txt'}",
        f"--eval_file={tmp_path / 'valid.txt'}",
        f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={model_dir}",
        f"--export_dir={tmp_path / 'export'}",
        "--tag_column=1", "--tag_scheme=plain", "--do_train", "--do_eval",
        "--max_seq_length=64", "--train_batch_size=16",
        "--num_train_epochs=3", "--learning_rate=3e-3",
        "--mixed_precision=none"])

    written = [line.split(" ") for line in (model_dir / "predictions.txt")
               .read_text(encoding="utf-8").splitlines() if line]
    gold_columns = _columns(valid)
    assert [w[:2] for w in written] == [[c[0], c[1]] for c in gold_columns]
    gold = np.array([w[1] for w in written])
    predicted = np.array([w[2] for w in written])
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["accuracy"] == pytest.approx(np.mean(gold == predicted),
                                                abs=1e-12)
    train_tags, counts = np.unique([c[1] for c in _columns(train)],
                                   return_counts=True)
    most_frequent = train_tags[np.argmax(counts)]
    baseline = np.mean(gold == most_frequent)
    assert results["accuracy"] > baseline + 0.1, (results["accuracy"],
                                                  baseline)

    export = tf.saved_model.load(str(tmp_path / "export" / "1"))
    out = export.signatures["serving_default"](
        text=tf.constant(["EU rejects German call to boycott British lamb ."]))
    assert not any(name.startswith("entity_") for name in out)
    assert int(out["num_words"][0]) == 9
    labels = (model_dir / "labels.txt").read_text().split()
    assert labels == sorted({c[1] for c in _columns(train)})
    assert {t.decode() for t in out["word_labels"][0].numpy()} <= set(labels)
