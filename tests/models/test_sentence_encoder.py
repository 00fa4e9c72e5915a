"""`SentenceEncoder` against sentence-transformers: the real
all-MiniLM-L6-v2 on real sentences, sentence-transformers directories with
max pooling and a Dense module, and a random-weight RoBERTa; training a step
in every family; the .keras round trip."""

import csv
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
from sentence_transformers import SentenceTransformer, models

import tfbert
from tfbert.checkpoints.sentence_transformers import read_pipeline
from tfbert.losses import CosineSimilarityLoss, MultipleNegativesRankingLoss
from tfbert.models import SentenceEncoder
from zoo_checkpoints import FAMILIES

TEXTS = ["A man is eating food.", "Someone eats.",
         "The sky is blue today, and the long sentence is longer."]


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


@pytest.fixture(scope="module")
def tiny_bert_encoder(zoo_checkpoints):
    keras.utils.set_random_seed(0)
    return SentenceEncoder.from_pretrained(
        zoo_checkpoints["bert"], pooling="max", normalize=True,
        projection_size=8)


def _cosines(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


def test_reads_sentence_transformers_settings(minilm_sentence_encoder):
    # all-MiniLM-L6-v2: mean pooling, a Normalize module, max_seq_length 256.
    assert minilm_sentence_encoder.pooling == "mean"
    assert minilm_sentence_encoder.normalize
    assert minilm_sentence_encoder.preprocessor.seq_length == 256
    assert minilm_sentence_encoder.projection is None


@pytest.mark.slow
def test_matches_sentence_transformers(minilm_sentence_encoder, minilm_dir,
                                       sentences):
    ours = minilm_sentence_encoder.encode(sentences, batch_size=32)
    theirs = SentenceTransformer(str(minilm_dir), device="cpu").encode(
        sentences, batch_size=32)
    assert ours.dtype == np.float32 and ours.shape == (200, 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert _cosines(ours, theirs).min() >= 0.99999
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


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


@pytest.mark.slow
def test_reads_a_saved_pipeline_with_max_pooling_and_dense(
        minilm_dir, sentences, tmp_path):
    """A directory as sentence-transformers saves it today (pooling_mode,
    Dense weights in 2_Dense/, the length in tokenizer_config.json), plus
    the vocab.txt that older releases saved."""
    import torch

    torch.manual_seed(0)
    reference = SentenceTransformer(modules=[
        models.Transformer(str(minilm_dir), max_seq_length=64),
        models.Pooling(384, pooling_mode="max"), models.Dense(384, 48),
        models.Normalize()], device="cpu")
    reference.save(str(tmp_path))
    # Newer releases save only tokenizer.json; tfbert reads vocab.txt.
    shutil.copyfile(minilm_dir / "vocab.txt", tmp_path / "vocab.txt")
    ours = SentenceEncoder.from_pretrained(tmp_path)
    assert (ours.pooling, ours.normalize, ours.embedding_size,
            ours.preprocessor.seq_length) == ("max", True, 48, 64)
    batch = sentences[100:140]
    a, b = ours.encode(batch, batch_size=16), reference.encode(batch)
    assert a.shape == (40, 48)
    assert _cosines(a, b).min() >= 0.99999
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_non_bert_family_matches_sentence_transformers(zoo_checkpoints,
                                                       sentences):
    directory = zoo_checkpoints["roberta"]
    ours = SentenceEncoder.from_pretrained(directory, seq_length=128)
    reference = SentenceTransformer(modules=[
        models.Transformer(str(directory), max_seq_length=128),
        models.Pooling(32, pooling_mode="mean")], device="cpu")
    batch = sentences[:32]
    a, b = ours.encode(batch, batch_size=16), reference.encode(batch)
    assert _cosines(a, b).min() >= 0.99999
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_keras_forward_equals_encode_and_stacks_columns(tiny_bert_encoder):
    model = tiny_bert_encoder
    encoded = model.encode(TEXTS)
    assert encoded.shape == (3, 8)
    np.testing.assert_allclose(np.linalg.norm(encoded, axis=1), 1.0,
                               atol=1e-6)
    np.testing.assert_allclose(model(tf.constant(TEXTS)).numpy(), encoded,
                               atol=1e-6)
    # Batches of texts of similar lengths, rows in the order given.
    np.testing.assert_allclose(model.encode(TEXTS, batch_size=2), encoded,
                               atol=1e-6)
    stacked = model((tf.constant(TEXTS[:2]), tf.constant(TEXTS[1:]))).numpy()
    assert stacked.shape == (2, 2, 8)
    np.testing.assert_allclose(stacked[:, 0], encoded[:2], atol=1e-6)
    np.testing.assert_allclose(stacked[:, 1], encoded[1:], atol=1e-6)


def test_each_column_is_padded_to_its_own_longest_text(tiny_bert_encoder,
                                                       monkeypatch):
    # Short queries beside long passages: the queries' encoder pass is not
    # padded to the passages' length.
    model = tiny_bert_encoder
    lengths, call = [], model.encoder.call

    def spy(inputs, *args, **kwargs):
        lengths.append(int(inputs["input_word_ids"].shape[1]))
        return call(inputs, *args, **kwargs)

    monkeypatch.setattr(model.encoder, "call", spy)
    queries = tf.constant(["short", "a query"])
    passages = tf.constant(["word " * 40, "another long passage " * 10])
    model((queries, passages))
    assert lengths == [
        int(model.preprocessor(texts)["input_word_ids"].shape[1])
        for texts in (queries, passages)]
    assert lengths[0] < lengths[1]


def test_single_string_empty_list_and_long_text(tiny_bert_encoder):
    model = tiny_bert_encoder
    one = model.encode(TEXTS[0])
    assert one.shape == (8,)
    np.testing.assert_allclose(one, model.encode(TEXTS[:1])[0], atol=1e-6)
    assert model.encode([]).shape == (0, 8)
    long = model.encode(["word " * 1000, "short"])
    assert long.shape == (2, 8) and np.isfinite(long).all()


def test_progress_bar_over_sentences(tiny_bert_encoder, capsys):
    tiny_bert_encoder.encode(TEXTS, batch_size=2)
    assert "3/3" in capsys.readouterr().out
    tiny_bert_encoder.encode(TEXTS, batch_size=2, show_progress_bar=False)
    tiny_bert_encoder.encode(TEXTS, batch_size=4)   # one batch: no bar
    assert capsys.readouterr().out == ""


def test_keras_save_and_load_round_trip(tiny_bert_encoder, tmp_path):
    model = tiny_bert_encoder
    model.compile(loss=CosineSimilarityLoss())
    path = tmp_path / "sentence.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored, SentenceEncoder)
    assert (restored.pooling, restored.normalize,
            restored.embedding_size) == ("max", True, 8)
    np.testing.assert_allclose(restored.encode(TEXTS), model.encode(TEXTS),
                               atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_trains_a_step(zoo_checkpoints, family):
    keras.utils.set_random_seed(0)
    model = SentenceEncoder.from_pretrained(zoo_checkpoints[family],
                                            seq_length=32)
    anchors = ["a cat sat", "dogs run", "the sun is hot", "rain falls"]
    positives = ["a cat is sitting", "a dog runs", "it is sunny", "wet day"]
    before = model.encode(anchors)
    model.compile(loss=MultipleNegativesRankingLoss(), learning_rate=1e-3,
                  warmup_fraction=0.0)
    history = model.fit((anchors, positives), batch_size=4, epochs=1,
                        verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert np.abs(model.encode(anchors) - before).max() > 1e-4


def test_fit_draws_batches_without_duplicate_texts(tiny_bert_encoder):
    """With an in-batch-negative loss, `fit` batches by
    `no_duplicate_batches`, epoch after epoch: 'same' occurs in two rows,
    which never share a batch, so 3 rows make two batches of at most 2."""
    model = tiny_bert_encoder
    model.compile(loss=MultipleNegativesRankingLoss(), learning_rate=1e-5)
    dataset, count = model._training_batches(
        (["same", "b", "c"], ["x", "same", "z"]), None, 3, shuffle=True)
    batches = [columns[0].numpy().tolist()
               for columns, _ in dataset.take(2 * count)]
    assert count == 2 and sorted(map(len, batches)) == [1, 1, 2, 2]
    for batch in batches:
        assert not (b"same" in batch and b"b" in batch)


def test_bad_arguments(tiny_bert_encoder, tmp_path):
    with pytest.raises(ValueError, match="pooling must be one of"):
        SentenceEncoder(tiny_bert_encoder.preprocessor,
                        tiny_bert_encoder.encoder, pooling="sum")
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        tiny_bert_encoder.encode(TEXTS, batch_size=0)


def test_unsupported_pooling_config_names_the_file(tmp_path):
    (tmp_path / "modules.json").write_text(
        '[{"type": "sentence_transformers.models.Transformer", "path": ""},'
        ' {"type": "sentence_transformers.models.Pooling",'
        ' "path": "1_Pooling"}]')
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(
        '{"pooling_mode_weightedmean_tokens": true}')
    with pytest.raises(ValueError, match="1_Pooling/config.json: pooling "
                       r"modes \['pooling_mode_weightedmean_tokens'\]"):
        read_pipeline(tmp_path)
    (tmp_path / "modules.json").write_text(
        '[{"type": "sentence_transformers.models.Transformer", "path": ""},'
        ' {"type": "sentence_transformers.models.CNN", "path": "1_CNN"}]')
    with pytest.raises(ValueError, match=r"modules.json: modules \["
                       "'sentence_transformers.models.CNN'\\]"):
        read_pipeline(tmp_path)


def _python_blocks(path, after):
    import re

    from tests.conftest import REPO_ROOT

    text = (REPO_ROOT / path).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text[text.index(after):], re.S)


@pytest.mark.slow
def test_readme_example_is_the_documented_one_and_runs():
    readme = _python_blocks("README.md", "## Sentence embeddings")[0]
    documented = _python_blocks("docs/sentence_embeddings.md",
                                "## In Python")[0]
    assert documented == "import tfbert\n\n" + readme
    assert len(readme.strip().splitlines()) == 5
    namespace = {}
    exec(compile(documented, "sentence_embeddings.md", "exec"), namespace)
    embeddings = namespace["embeddings"]
    assert embeddings.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0,
                               atol=1e-5)
    assert namespace["hits"] == [[{"corpus_id": 0, "score": pytest.approx(
        1.0, abs=1e-5)}]]
