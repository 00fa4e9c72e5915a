"""`tfbert-convert` (`python -m tasks.convert_checkpoint`) on a tiny checkpoint."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tfbert.checkpoints import read_checkpoint, save_pretrainer
from tfbert.config import BertConfig
from tfbert.models import BertEncoder, BertPretrainer
from tfbert.text import BertTokenizer
from tfbert.tasks.convert_checkpoint import convert

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=8, num_layers=1,
                        num_heads=2, intermediate_size=16,
                        max_position_embeddings=16)
    directory = tmp_path_factory.mktemp("convert") / "hf"
    save_pretrainer(BertPretrainer(BertEncoder(config)), directory,
                    tokenizer=BertTokenizer(VOCAB))
    return directory


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "tasks.convert_checkpoint", *args],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=REPO_ROOT))


@pytest.mark.slow
def test_cli_converts_hf_to_tf1_with_heads(source, tmp_path):
    result = _run(f"--input={source}", f"--output_dir={tmp_path / 'tf1'}",
                  "--format=tf1", "--with_heads")
    assert result.returncode == 0, result.stderr[-2000:]
    original, converted = read_checkpoint(source), read_checkpoint(
        tmp_path / "tf1")
    assert converted.format == "tf1" and converted.config == original.config
    assert sorted(converted.weights) == sorted(original.weights)
    assert any(k.startswith("cls/") for k in converted.weights)
    for name, value in original.weights.items():
        np.testing.assert_array_equal(converted.weights[name], value)
    assert (tmp_path / "tf1" / "vocab.txt").read_text().split() == VOCAB


@pytest.mark.slow
def test_cli_reports_bad_arguments(tmp_path):
    result = _run(f"--input={tmp_path / 'missing'}",
                  f"--output_dir={tmp_path / 'out'}")
    assert result.returncode != 0
    assert "neither a preset name, a directory nor a .keras file" in result.stderr
    assert not (tmp_path / "out").exists()


def test_without_heads_drops_them(source, tmp_path):
    assert convert(source, tmp_path / "kh", format="keras_hub") > 0
    converted = read_checkpoint(tmp_path / "kh")
    assert converted.format == "keras_hub"
    assert not any(k.startswith("cls/") for k in converted.weights)


def test_heads_errors(source, tmp_path):
    with pytest.raises(ValueError, match="keras-hub preset holds only"):
        convert(source, tmp_path / "kh", format="keras_hub", with_heads=True)
    encoder_only = tmp_path / "enc"
    convert(source, encoder_only, format="hf")
    with pytest.raises(ValueError, match="has no masked-LM/next-sentence"):
        convert(encoder_only, tmp_path / "x", format="tf1", with_heads=True)
    with pytest.raises(ValueError, match="has no weights"):
        convert("bert-tiny-uncased", tmp_path / "y")


def test_pretraining_model_dir_is_read_through_its_export(source, tmp_path):
    model_dir = tmp_path / "pretraining_run"
    (model_dir / "checkpoints").mkdir(parents=True)
    with pytest.raises(ValueError, match="--export_dir="):
        convert(model_dir, tmp_path / "refused")
    shutil.copytree(source, model_dir / "export")
    convert(model_dir, tmp_path / "out", format="tf1", with_heads=True)
    converted = read_checkpoint(tmp_path / "out")
    for name, value in read_checkpoint(source).weights.items():
        np.testing.assert_array_equal(converted.weights[name], value)


def test_written_files_follow_the_umask(source, tmp_path):
    previous = os.umask(0o022)
    try:
        convert(source, tmp_path / "out", format="hf")
    finally:
        os.umask(previous)
    for path in (tmp_path / "out").rglob("*"):
        expected = 0o755 if path.is_dir() else 0o644
        assert path.stat().st_mode & 0o777 == expected, path
