"""Intermediate-layer distillation (`LayerTransfer`): its terms against a
numpy computation on one batch, what it trains, and what a checkpoint of it
holds."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.training.test_distillation import _log_softmax
from tfbert import BertConfig, BertEncoder
from tfbert.models import SequenceClassifier, SpanLabeler, TokenClassifier
from tfbert.models.bert_token_classifier import token_classification_loss
from tfbert.models.student import student_from_teacher
from tfbert.training.distillation import DistillationConfig
from tfbert.training.layer_transfer import (
    LayerTransfer, attention_loss, hidden_state_loss, layer_pairs)

MASK = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)


def _encoder(hidden_size=16, num_layers=4, num_heads=2, seed=0,
             initializer_range=0.02):
    keras.utils.set_random_seed(seed)
    return BertEncoder(BertConfig(
        vocab_size=50, hidden_size=hidden_size, num_layers=num_layers,
        num_heads=num_heads, intermediate_size=2 * hidden_size,
        max_position_embeddings=16, hidden_dropout=0.0,
        attention_dropout=0.0, initializer_range=initializer_range))


def _inputs():
    rng = np.random.default_rng(0)
    return {"input_word_ids": rng.integers(1, 50, MASK.shape).astype(np.int32)
            * MASK,
            "input_mask": MASK, "input_type_ids": np.zeros_like(MASK)}


def _masked_mean(values, mask):
    return (values * mask).sum() / mask.sum()


def _numpy_hidden_term(student, teacher, mask):
    return _masked_mean(((student - teacher) ** 2).mean(-1), mask)


def _numpy_attention_term(student_scores, teacher_scores, mask):
    log_p, log_q = (_log_softmax(x.astype(np.float64))
                    for x in (teacher_scores, student_scores))
    kl = (np.exp(log_p) * (log_p - log_q)).sum(-1)  # [batch, heads, seq]
    return _masked_mean(kl.mean(1), mask)


def _numpy_scores(attention, hidden, mask):
    """The attention scores of `attention` on `hidden` [batch, seq, H],
    from its weights: (x Wq + bq)(x Wk + bk)^T / sqrt(head), padding keys
    at -1e9."""
    heads = attention.num_heads

    def project(dense):
        kernel, bias = (np.asarray(w) for w in dense.get_weights())
        x = hidden @ kernel + bias
        batch, seq, width = x.shape
        return x.reshape(batch, seq, heads, width // heads).transpose(
            0, 2, 1, 3)

    query, key = project(attention.query), project(attention.key)
    scores = query @ key.transpose(0, 1, 3, 2) / np.sqrt(query.shape[-1])
    return scores + (1 - mask[:, None, None, :]) * -1e9


@pytest.mark.parametrize("k, n, expected", [
    (3, 6, [(0, 1), (1, 3), (2, 5)]),
    (2, 6, [(0, 2), (1, 5)]),
    (1, 4, [(0, 3)]),
    (4, 4, [(0, 0), (1, 1), (2, 2), (3, 3)]),
])
def test_student_layer_learns_the_last_of_its_group(k, n, expected):
    assert layer_pairs(k, n) == expected


def test_a_student_deeper_than_its_teacher_is_refused():
    with pytest.raises(ValueError, match="a student of 5 layers"):
        layer_pairs(5, 4)


def test_hidden_term_is_mse_over_real_tokens():
    rng = np.random.default_rng(1)
    student, teacher = (rng.normal(size=(2, 6, 4)).astype(np.float32)
                        for _ in range(2))
    got = float(hidden_state_loss(student, teacher, MASK))
    np.testing.assert_allclose(
        got, _numpy_hidden_term(student, teacher, MASK), rtol=1e-5)
    # Padding positions do not count.
    student[0, 4:] += 100.0
    assert float(hidden_state_loss(student, teacher, MASK)) == pytest.approx(
        got, rel=1e-5)


def test_attention_term_is_kl_over_heads_and_real_queries():
    rng = np.random.default_rng(2)
    bias = (1 - MASK[:, None, None, :]) * -1e9
    student, teacher = ((rng.normal(size=(2, 3, 6, 6)) * 3 + bias)
                        .astype(np.float32) for _ in range(2))
    got = float(attention_loss(student, teacher, MASK))
    np.testing.assert_allclose(
        got, _numpy_attention_term(student, teacher, MASK), rtol=1e-5)
    assert got > 0
    assert float(attention_loss(teacher, teacher, MASK)) == pytest.approx(
        0.0, abs=1e-6)
    # A padded query row does not count.
    student[0, :, 5, :4] += 50.0
    assert float(attention_loss(student, teacher, MASK)) == pytest.approx(
        got, rel=1e-5)


@pytest.fixture(scope="module")
def classifiers():
    """A 4-layer tiny teacher and a 2-layer student of its layers."""
    teacher = SequenceClassifier(_encoder(), num_classes=3, dropout=0.0)
    return teacher, student_from_teacher(teacher, 2)


def test_training_form_outputs_the_students_and_adds_both_terms(classifiers):
    teacher, student = classifiers
    x = _inputs()
    model = LayerTransfer(student, teacher, DistillationConfig(
        hidden_weight=0.7, attention_weight=0.3))
    np.testing.assert_allclose(np.asarray(model(x, training=False)),
                               np.asarray(student(x)), atol=1e-6)
    assert not model.losses
    model(x, training=True)
    (got,) = model.losses

    student_out = [np.asarray(h) for h in student.encoder(x)[
        "encoder_outputs"]]
    teacher_out = [np.asarray(h) for h in teacher.encoder(x)[
        "encoder_outputs"]]
    student_in = [np.asarray(student.encoder.embedding_output(x))
                  ] + student_out[:-1]
    teacher_in = [np.asarray(teacher.encoder.embedding_output(x))
                  ] + teacher_out[:-1]
    expected = 0.0
    for i, j in [(0, 1), (1, 3)]:
        expected += 0.7 * _numpy_hidden_term(student_out[i], teacher_out[j],
                                             MASK)
        expected += 0.3 * _numpy_attention_term(
            _numpy_scores(student.encoder.block(i).attention, student_in[i],
                          MASK),
            _numpy_scores(teacher.encoder.block(j).attention, teacher_in[j],
                          MASK), MASK)
    assert expected > 0
    np.testing.assert_allclose(float(got), expected, rtol=1e-4)


def test_teacher_is_neither_trained_nor_checkpointed(classifiers, tmp_path):
    teacher, student = classifiers
    model = LayerTransfer(student, teacher, DistillationConfig(
        hidden_weight=1.0, attention_weight=1.0))
    assert ({id(v) for v in model.trainable_variables}
            == {id(v) for v in student.trainable_variables})
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    saved = [name for name, _ in tf.train.list_variables(path)
             if name.endswith("VARIABLE_VALUE")]
    assert len(saved) == len(student.weights)


def test_a_narrower_student_learns_through_projections(classifiers, tmp_path):
    teacher, _ = classifiers
    student = SequenceClassifier(_encoder(hidden_size=8, num_layers=2,
                                          seed=1), num_classes=3)
    model = LayerTransfer(student, teacher, DistillationConfig(
        hidden_weight=1.0, attention_weight=1.0))
    assert [p.kernel.shape for p in model.projections] == [(8, 16)] * 2
    assert len(model.trainable_variables) == len(
        student.trainable_variables) + 4
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    saved = [name for name, _ in tf.train.list_variables(path)
             if name.endswith("VARIABLE_VALUE")]
    assert len(saved) == len(student.weights) + 4
    assert sum("hidden_projection_" in name for name in saved) == 4
    # Without the hidden-state term there is nothing to project.
    assert not LayerTransfer(student, teacher, DistillationConfig(
        attention_weight=1.0)).projections


def test_attention_transfer_needs_the_same_heads(classifiers):
    teacher, _ = classifiers
    student = SequenceClassifier(_encoder(num_layers=2, num_heads=4),
                                 num_classes=3)
    with pytest.raises(ValueError, match="needs the teacher's 2 heads; the "
                                         "student has 4"):
        LayerTransfer(student, teacher, DistillationConfig(
            attention_weight=1.0))
    LayerTransfer(student, teacher, DistillationConfig(hidden_weight=1.0))


def _task_models(kind):
    """(teacher, labels, loss) of one task kind on `_inputs()`; the
    teacher's blocks are far from the identity (large initial weights), so
    a student of its layers starts far from the layers it learns."""
    batch, seq = MASK.shape
    encoder = _encoder(initializer_range=0.5)
    if kind == "classifier":
        teacher = SequenceClassifier(encoder, num_classes=3)
        return (teacher, np.array([0, 2]),
                keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    if kind == "span":
        teacher = SpanLabeler(encoder)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return (teacher, {"start_logits": np.array([1, 2]),
                          "end_logits": np.array([2, 3])},
                {"start_logits": loss, "end_logits": loss})
    teacher = TokenClassifier(encoder, num_labels=5)
    return (teacher, np.tile(np.arange(seq) % 5, (batch, 1)) * MASK - (
        1 - MASK), token_classification_loss)


@pytest.mark.parametrize("kind", ["classifier", "span", "tagger"])
def test_each_task_kind_learns_its_teachers_layers(kind):
    teacher, labels, loss = _task_models(kind)
    student = student_from_teacher(teacher, 2)
    model = LayerTransfer(student, teacher, DistillationConfig(
        hidden_weight=1.0, attention_weight=1.0))
    x = _inputs()

    def transfer_term():
        features = student.encoder_inputs(x)
        outputs = student.encoder(features)["encoder_outputs"]
        return float(model.transfer_loss(x, features, outputs))

    before = transfer_term()
    teacher_weights = [np.array(w) for w in teacher.get_weights()]
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=loss)
    data = tf.data.Dataset.from_tensors((x, labels)).repeat(12)
    model.fit(data, epochs=1, verbose=0)
    assert transfer_term() < 0.7 * before
    for old, new in zip(teacher_weights, teacher.get_weights()):
        np.testing.assert_array_equal(old, new)
