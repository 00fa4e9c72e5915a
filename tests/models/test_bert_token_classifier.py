"""TokenClassifier (formerly BertTokenClassifier): CRF option, loss,
decoding, .keras round trip and from_pretrained."""

import keras
import numpy as np
import pytest

from tfbert.config import BertConfig
from tfbert.models import BertEncoder, BertTokenClassifier, TokenClassifier
from tfbert.models.bert_token_classifier import token_classification_loss

LABELS = ["O", "B-PER", "I-PER"]


def _inputs():
    ids = np.array([[2, 5, 6, 7, 3, 0], [2, 8, 3, 0, 0, 0]], np.int32)
    return {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32),
            "input_type_ids": np.zeros_like(ids)}


def _model(use_crf):
    encoder = BertEncoder(BertConfig(vocab_size=16, hidden_size=16,
                                     num_layers=1, num_heads=2,
                                     intermediate_size=32))
    return BertTokenClassifier(encoder, 3, use_crf=use_crf, labels=LABELS)


def test_crf_model_saves_and_loads(tmp_path):
    model = _model(use_crf=True)
    model.crf.transitions.assign(np.arange(9, dtype="float32").reshape(3, 3))
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.use_crf and restored.labels == LABELS
    np.testing.assert_allclose(restored.crf.transitions.numpy(),
                               model.crf.transitions.numpy())
    np.testing.assert_allclose(restored(_inputs()), model(_inputs()),
                               atol=1e-6)


@pytest.mark.slow
def test_crf_fit_lowers_loss_and_decodes_valid_tags():
    # Seeded: initial weights and dropout masks, hence the fitted tags.
    keras.utils.set_random_seed(0)
    model = _model(use_crf=True)
    labels = np.array([[-100, 1, 2, 0, -100, -100],
                       [-100, 1, -100, -100, -100, -100]], np.int32)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=None)
    history = model.fit(_inputs(), labels, epochs=30, batch_size=2, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    tags = model.decode(model(_inputs()), labels >= 0).numpy()
    assert tags[0].tolist() == [-1, 1, 2, 0, -1, -1]
    assert tags[1].tolist() == [-1, 1, -1, -1, -1, -1]


def test_softmax_loss_ignores_negative_labels():
    logits = np.log(np.array([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]],
                             "float32"))
    loss = token_classification_loss(np.array([[0, -100]]), logits)
    np.testing.assert_allclose(loss.numpy(), -np.log(0.5), rtol=1e-6)


def test_from_pretrained_loads_the_encoder_without_a_pooler(tiny_checkpoint):
    model = TokenClassifier.from_preset(tiny_checkpoint, 3, use_crf=True,
                                        labels=LABELS)
    assert model.encoder.pooler is None and model.use_crf
    reference = BertEncoder.from_pretrained(tiny_checkpoint)
    np.testing.assert_array_equal(
        model.encoder.embeddings.word_embeddings.numpy(),
        reference.embeddings.word_embeddings.numpy())


def test_crf_loss_skips_rows_without_tags():
    """A row with no tag (a sentence only a distillation teacher tagged)
    leaves the mean over the tagged rows unchanged."""
    model = _model(use_crf=True)
    emissions = np.random.default_rng(0).normal(size=(2, 6, 3)).astype(
        "float32")
    tagged = np.array([[-100, 1, 2, 0, -100, -100]], np.int32)
    untagged = np.array([[-100, -1, -1, -100, -100, -100]], np.int32)
    alone = model.crf_negative_log_likelihood(tagged, emissions[:1])
    with_untagged = model.crf_negative_log_likelihood(
        np.concatenate([tagged, untagged]), emissions)
    np.testing.assert_allclose(with_untagged.numpy(), alone.numpy(),
                               rtol=1e-6)
    assert alone.numpy() > 0
