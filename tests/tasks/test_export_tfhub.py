"""`python -m tasks.export_tfhub` on tiny checkpoints."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the preprocessor's ops)

from tfbert.checkpoints import save_pretrainer
from tfbert.config import BertConfig
from tfbert.models import BertEncoder, BertPretrainer
from tfbert.text import BertPreprocessor, BertTokenizer

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]


@pytest.fixture(scope="module")
def pretraining_checkpoint(tmp_path_factory):
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=8, num_layers=1,
                        num_heads=2, intermediate_size=16,
                        max_position_embeddings=16)
    directory = tmp_path_factory.mktemp("export_tfhub") / "checkpoint"
    save_pretrainer(BertPretrainer(BertEncoder(config)), directory,
                    tokenizer=BertTokenizer(VOCAB))
    return directory


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "tasks.export_tfhub", *args],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=400,
        env=dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2"))


@pytest.mark.slow
def test_cli_exports_encoder_with_mlm_and_preprocessor(pretraining_checkpoint,
                                                       tmp_path):
    result = _run(f"--init_checkpoint={pretraining_checkpoint}",
                  f"--encoder_export_dir={tmp_path / 'encoder'}",
                  f"--preprocessor_export_dir={tmp_path / 'preprocess'}",
                  "--with_mlm", "--seq_length=6")
    assert result.returncode == 0, result.stderr[-3000:]
    preprocess = tf.saved_model.load(str(tmp_path / "preprocess"))
    texts = tf.constant(["hello world hello world", "world"])
    inputs = preprocess(texts)
    np.testing.assert_array_equal(
        inputs["input_word_ids"],
        BertPreprocessor(BertTokenizer(VOCAB), seq_length=6)(texts)[
            "input_word_ids"])
    encoder = tf.saved_model.load(str(tmp_path / "encoder"))
    np.testing.assert_allclose(
        encoder(inputs)["pooled_output"],
        BertEncoder.from_pretrained(pretraining_checkpoint)(inputs)[
            "pooled_output"], atol=1e-6)
    logits = encoder.mlm(dict(inputs, masked_lm_positions=tf.constant(
        [[1], [1]])))["mlm_logits"]
    assert logits.shape == (2, 1, len(VOCAB))


@pytest.mark.parametrize("args, message", [
    (["--with_mlm", "--encoder_export_dir={tmp}/e"],
     "--with_mlm: .* has no masked-LM head"),
    ([], "give --encoder_export_dir, --preprocessor_export_dir or both"),
    (["--preprocessor_export_dir={tmp}", "--seq_length=1"],
     "--seq_length=1: must be >= 2"),
    (["--encoder_export_dir={tmp}"],
     "--encoder_export_dir: .* exists and is not empty"),
])
def test_cli_errors_are_one_line(tiny_checkpoint, tmp_path, args, message):
    (tmp_path / "file").write_text("x")
    result = _run(f"--init_checkpoint={tiny_checkpoint}",
                  *(a.format(tmp=tmp_path) for a in args))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert re.search("export_tfhub: error: " + message, result.stderr), (
        result.stderr[-2000:])
