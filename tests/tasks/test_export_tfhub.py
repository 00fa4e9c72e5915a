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


@pytest.mark.slow
def test_bfloat16_encoder_computes_in_bfloat16_near_float32(
        pretraining_checkpoint, tmp_path):
    from tests.export.test_precision import matmul_dtypes

    result = _run(f"--init_checkpoint={pretraining_checkpoint}",
                  f"--encoder_export_dir={tmp_path / 'encoder'}",
                  "--with_mlm", "--export_precision=bfloat16")
    assert result.returncode == 0, result.stderr[-3000:]
    encoder = tf.saved_model.load(str(tmp_path / "encoder"))
    inputs = {"input_word_ids": tf.constant([[2, 5, 6, 3], [2, 6, 3, 0]]),
              "input_mask": tf.constant([[1, 1, 1, 1], [1, 1, 1, 0]]),
              "input_type_ids": tf.zeros([2, 4], tf.int32)}
    dtypes = matmul_dtypes(encoder.__call__.get_concrete_function(
        {name: tf.TensorSpec([None, None], tf.int32) for name in inputs},
        training=False))
    # Q, K, V, attention output, feed-forward, pooler, and the attention
    # products twice (for small and large problems).
    assert dtypes == {"bfloat16": 11}
    reference = BertEncoder.from_pretrained(pretraining_checkpoint)(inputs)
    outputs = encoder(inputs)
    real = inputs["input_mask"].numpy() == 1  # padding: zeros at inference
    for name, read in (("pooled_output", lambda x: x.numpy()),
                       ("sequence_output", lambda x: x.numpy()[real])):
        assert outputs[name].dtype == tf.float32
        np.testing.assert_allclose(read(outputs[name]), read(reference[name]),
                                   atol=3e-2)
        assert not np.array_equal(read(outputs[name]), read(reference[name]))
    logits = encoder.mlm(dict(inputs, masked_lm_positions=tf.constant(
        [[1], [1]])))["mlm_logits"]
    assert logits.dtype == tf.float32


@pytest.mark.parametrize("args, message", [
    (["--with_mlm", "--encoder_export_dir={tmp}/e"],
     "--with_mlm: .* has no masked-LM head"),
    ([], "give --encoder_export_dir, --preprocessor_export_dir or "
         "--text_embedding_export_dir"),
    (["--preprocessor_export_dir={tmp}", "--seq_length=1"],
     "--seq_length=1: must be >= 2"),
    (["--encoder_export_dir={tmp}"],
     "--encoder_export_dir: .* exists and is not empty"),
])
@pytest.mark.slow
def test_cli_errors_are_one_line(tiny_checkpoint, tmp_path, args, message):
    (tmp_path / "file").write_text("x")
    result = _run(f"--init_checkpoint={tiny_checkpoint}",
                  *(a.format(tmp=tmp_path) for a in args))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert re.search("export_tfhub: error: " + message, result.stderr), (
        result.stderr[-2000:])


def test_families_export_where_they_fit_the_tf_hub_interface(
        zoo_checkpoints, tmp_path):
    """ALBERT (pooler; SentencePiece; `[CLS] A [SEP] B [SEP]`): the encoder,
    its masked-LM head and the preprocessor export, and compute what the
    family's model and preprocessor compute. DistilBERT (no pooler) and
    RoBERTa's packing do not fit the interface and are refused."""
    from tfbert.checkpoints import load_pretrainer
    from tfbert.tasks.export_tfhub import export_tfhub
    from tfbert.text import Preprocessor

    albert = tmp_path / "albert"  # AlbertForPreTraining: with heads
    save_pretrainer(load_pretrainer(zoo_checkpoints["albert"]), albert,
                    Preprocessor.from_pretrained(
                        zoo_checkpoints["albert"]).tokenizer)
    export_tfhub(str(albert), tmp_path / "encoder", tmp_path / "preprocess",
                 with_mlm=True, seq_length=24)
    encoder = tf.saved_model.load(str(tmp_path / "encoder"))
    preprocess = tf.saved_model.load(str(tmp_path / "preprocess"))
    texts = tf.constant(["The Normans were a people.", "in the 10th century"])
    expected_inputs = Preprocessor.from_pretrained(albert, seq_length=24)(texts)
    inputs = preprocess(texts)
    for name, value in expected_inputs.items():
        np.testing.assert_array_equal(inputs[name].numpy(), value.numpy())

    model = load_pretrainer(albert)
    positions = tf.constant([[1, 2], [3, 0]])
    expected = model.encoder(expected_inputs)
    outputs = encoder.mlm({**inputs, "masked_lm_positions": positions})
    real = inputs["input_mask"].numpy() == 1  # padding: zeros at inference
    np.testing.assert_allclose(outputs["pooled_output"].numpy(),
                               expected["pooled_output"].numpy(), atol=1e-5)
    np.testing.assert_allclose(outputs["sequence_output"].numpy()[real],
                               expected["sequence_output"].numpy()[real],
                               atol=1e-5)
    np.testing.assert_allclose(
        outputs["mlm_logits"].numpy(),
        model({**expected_inputs, "masked_lm_positions": positions})[
            "masked_lm_logits"].numpy(), atol=1e-5)
    assert encoder.sp_model_file.asset_path.numpy().endswith(b"spiece.model")
    assert open(encoder.sp_model_file.asset_path.numpy(), "rb").read() == (
        (albert / "spiece.model").read_bytes())

    with pytest.raises(ValueError, match="returns pooled_output, and this "
                                         "DistilBertEncoder has no pooler"):
        export_tfhub(str(zoo_checkpoints["distilbert"]), tmp_path / "d")
    with pytest.raises(ValueError, match="`preprocessor_export_dir`: .* "
                                         "roberta checkpoint with another"):
        export_tfhub(str(zoo_checkpoints["roberta"]),
                     preprocessor_export_dir=tmp_path / "r")


@pytest.mark.slow
def test_text_embedding_of_any_family_equals_encode(zoo_checkpoints,
                                                    tmp_path):
    """--text_embedding_export_dir with --pooling and --normalize on a
    RoBERTa checkpoint (byte-level BPE, no [CLS] layout): the SavedModel's
    root maps strings to what `SentenceEncoder.encode` gives."""
    from tfbert.models import SentenceEncoder
    from tfbert.tasks.export_tfhub import export_tfhub

    checkpoint = str(zoo_checkpoints["roberta"])
    written = export_tfhub(checkpoint,
                           text_embedding_export_dir=tmp_path / "embedding",
                           pooling="max", normalize=True)
    assert written == [str(tmp_path / "embedding")]
    texts = ["The Normans were a people.", "in the 10th century", ""]
    expected = SentenceEncoder.from_pretrained(
        checkpoint, pooling="max", normalize=True).encode(texts)
    embeddings = tf.saved_model.load(written[0])(tf.constant(texts)).numpy()
    np.testing.assert_allclose(embeddings, expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0,
                               atol=1e-5)
