"""`SentenceEncoder` against sentence-transformers on the real
all-MiniLM-L6-v2 and on real sentences."""

import csv

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer, models

import tfbert
from tfbert.sentence_encoder import SentenceEncoder


@pytest.fixture(scope="module")
def sentences(shared_data_dir):
    """200 real sentences: SST-2 dev and MRPC dev (untokenized news text)."""
    with open(shared_data_dir / "glue" / "SST-2" / "dev.tsv",
              encoding="utf-8") as f:
        sst = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    with open(shared_data_dir / "glue" / "MRPC" / "dev.tsv",
              encoding="utf-8-sig", newline="") as f:
        mrpc = [row[3] for row in csv.reader(f, delimiter="\t",
                                             quoting=csv.QUOTE_NONE)][1:]
    return sst[:100] + mrpc[:100]


@pytest.fixture(scope="module")
def minilm_sentence_encoder():
    return tfbert.SentenceEncoder.from_pretrained("minilm-l6-h384-uncased")


def _cosines(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


def test_reads_sentence_transformers_settings(minilm_sentence_encoder):
    # all-MiniLM-L6-v2: mean pooling, a Normalize module, max_seq_length 256.
    assert minilm_sentence_encoder.pooling == "mean"
    assert minilm_sentence_encoder.normalize
    assert minilm_sentence_encoder.preprocessor.seq_length == 256


@pytest.mark.slow
def test_matches_sentence_transformers(minilm_sentence_encoder, minilm_dir,
                                       sentences):
    ours = minilm_sentence_encoder.encode(sentences, batch_size=32)
    theirs = SentenceTransformer(str(minilm_dir), device="cpu").encode(
        sentences, batch_size=32)
    assert ours.dtype == np.float32 and ours.shape == (200, 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert _cosines(ours, theirs).min() >= 0.99999


@pytest.mark.slow
def test_cls_pooling_matches_sentence_transformers(minilm_dir, sentences):
    ours = SentenceEncoder.from_pretrained(minilm_dir, pooling="cls",
                                           normalize=False)
    reference = SentenceTransformer(modules=[
        models.Transformer(str(minilm_dir), max_seq_length=256),
        models.Pooling(384, pooling_mode="cls")], device="cpu")
    batch = sentences[:40]
    a, b = ours.encode(batch, batch_size=16), reference.encode(batch)
    assert _cosines(a, b).min() >= 0.99999
    np.testing.assert_allclose(a, b, atol=1e-4)


def test_long_text_is_truncated_and_empty_list(minilm_sentence_encoder):
    out = minilm_sentence_encoder.encode(["word " * 1000, "short"])
    assert out.shape == (2, 384) and np.isfinite(out).all()
    assert minilm_sentence_encoder.encode([]).shape == (0, 384)


def test_progress_bar_over_sentences(minilm_sentence_encoder, capsys):
    texts = ["one", "two", "three"]
    minilm_sentence_encoder.encode(texts, batch_size=2)
    assert "3/3" in capsys.readouterr().out
    minilm_sentence_encoder.encode(texts, batch_size=2, verbose=0)
    minilm_sentence_encoder.encode(texts, batch_size=4)   # one batch: "auto"
    assert capsys.readouterr().out == ""


def test_bad_arguments(minilm_sentence_encoder, tmp_path):
    with pytest.raises(TypeError, match="list of sentences"):
        minilm_sentence_encoder.encode("one string")
    with pytest.raises(ValueError, match="pooling must be one of"):
        SentenceEncoder(minilm_sentence_encoder.encoder,
                        minilm_sentence_encoder.preprocessor, pooling="max")


def test_unsupported_pooling_config_names_the_file(minilm_dir, tmp_path):
    from tfbert.sentence_encoder import _read_pooling

    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(
        '{"pooling_mode_max_tokens": true, "pooling_mode_mean_tokens": false}')
    with pytest.raises(ValueError, match="1_Pooling/config.json: pooling "
                       r"modes \['max_tokens'\]"):
        _read_pooling(tmp_path)
