"""The distillation loss against a numpy re-computation on one batch."""

import numpy as np
import pytest

from tfbert.data.ner_alignment import IGNORE_LABEL
from tfbert.models.bert_token_classifier import token_classification_loss
from tfbert.training.distillation import (
    UNLABELLED_WORD, DistillationConfig, TaskDistillationLoss,
    TokenDistillationLoss, soft_target_loss, unlabelled, with_teacher_outputs)


def _log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _numpy_soft_term(teacher, student, temperature):
    log_p = _log_softmax(teacher / temperature)
    log_q = _log_softmax(student / temperature)
    kl = (np.exp(log_p) * (log_p - log_q)).sum(-1)
    return temperature ** 2 * kl.mean()


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    teacher = rng.normal(size=(6, 3)).astype(np.float32) * 3
    student = rng.normal(size=(6, 3)).astype(np.float32)
    labels = rng.integers(0, 3, size=6)
    return teacher, student, labels


@pytest.mark.parametrize("temperature", [1.0, 2.0, 4.0])
def test_soft_term_is_t_squared_kl(batch, temperature):
    teacher, student, _ = batch
    got = float(soft_target_loss(teacher, student, temperature))
    np.testing.assert_allclose(
        got, _numpy_soft_term(teacher, student, temperature), rtol=1e-4)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_classification_loss_mixes_hard_and_soft(batch, alpha):
    teacher, student, labels = batch
    loss = TaskDistillationLoss(DistillationConfig(alpha, temperature=2.0))
    got = float(loss(with_teacher_outputs(labels, teacher), student))
    hard = -_log_softmax(student)[np.arange(6), labels].mean()
    expected = (alpha * hard
                + (1 - alpha) * _numpy_soft_term(teacher, student, 2.0))
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_regression_loss_is_squared_error_to_label_and_teacher():
    rng = np.random.default_rng(1)
    scores, teacher, student = (rng.normal(size=(5, 1)).astype(np.float32)
                                for _ in range(3))
    loss = TaskDistillationLoss(DistillationConfig(0.25, 3.0),
                                regression=True)
    got = float(loss(with_teacher_outputs(scores[:, 0], teacher), student))
    expected = (0.25 * ((scores - student) ** 2).mean()
                + 0.75 * ((teacher - student) ** 2).mean())
    np.testing.assert_allclose(got, expected, rtol=1e-5)


@pytest.mark.parametrize("alpha, temperature, message", [
    (-0.1, 2.0, "alpha"), (1.5, 2.0, "alpha"),
    (0.5, 0.0, "temperature"), (0.5, -1.0, "temperature")])
def test_config_refuses_out_of_range_values(alpha, temperature, message):
    with pytest.raises(ValueError, match=message):
        DistillationConfig(alpha, temperature)


def _numpy_binary_soft_term(teacher, student, temperature):
    def log_sigmoid(x):
        return -np.logaddexp(0, -x)
    t, s = teacher / temperature, student / temperature
    p = np.exp(log_sigmoid(t))
    kl = (p * (log_sigmoid(t) - log_sigmoid(s))
          + (1 - p) * (log_sigmoid(-t) - log_sigmoid(-s)))
    return temperature ** 2 * kl.mean()


def test_multi_label_loss_is_bce_and_binary_kl_per_label():
    rng = np.random.default_rng(2)
    teacher = rng.normal(size=(5, 4)).astype(np.float32) * 3
    student = rng.normal(size=(5, 4)).astype(np.float32)
    hot = rng.integers(0, 2, size=(5, 4)).astype(np.float32)
    loss = TaskDistillationLoss(DistillationConfig(0.4, 2.0),
                                multi_label=True)
    got = float(loss(with_teacher_outputs(hot, teacher), student))
    probability = 1 / (1 + np.exp(-student))
    bce = -(hot * np.log(probability)
            + (1 - hot) * np.log(1 - probability)).mean()
    expected = 0.4 * bce + 0.6 * _numpy_binary_soft_term(teacher, student, 2.0)
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_unlabelled_rows_add_the_soft_term_only(batch):
    teacher, student, labels = batch
    loss = TaskDistillationLoss(DistillationConfig(0.3, 2.0))
    targets = np.concatenate([with_teacher_outputs(labels[:4], teacher[:4]),
                              with_teacher_outputs(unlabelled(2),
                                                   teacher[4:])])
    got = float(loss(targets, student))
    hard = -_log_softmax(student[:4])[np.arange(4), labels[:4]].mean()
    expected = 0.3 * hard + 0.7 * _numpy_soft_term(teacher, student, 2.0)
    np.testing.assert_allclose(got, expected, rtol=1e-4)


@pytest.fixture
def tagged_batch():
    """Tags [2, 5] with skipped positions (IGNORE_LABEL: pieces, specials,
    padding; UNLABELLED_WORD: a teacher-labelled sentence's words)."""
    rng = np.random.default_rng(3)
    tags = np.array([[IGNORE_LABEL, 2, 0, IGNORE_LABEL, IGNORE_LABEL],
                     [IGNORE_LABEL, UNLABELLED_WORD, UNLABELLED_WORD, 1,
                      IGNORE_LABEL]], np.float32)
    teacher = rng.normal(size=(2, 5, 3)).astype(np.float32) * 3
    student = rng.normal(size=(2, 5, 3)).astype(np.float32)
    return tags, teacher, student


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_token_loss_is_masked_per_token_kl(tagged_batch, alpha):
    tags, teacher, student = tagged_batch
    loss = TokenDistillationLoss(DistillationConfig(alpha, 3.0),
                                 token_classification_loss)
    y_true = np.concatenate([tags[..., None], teacher], axis=-1)
    got = float(loss(y_true, student))
    soft_positions = tags != IGNORE_LABEL
    hard_positions = tags >= 0
    hard = -_log_softmax(student)[hard_positions,
                                  tags[hard_positions].astype(int)].mean()
    expected = alpha * hard + (1 - alpha) * _numpy_soft_term(
        teacher[soft_positions], student[soft_positions], 3.0)
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_token_loss_round_trips_its_config():
    loss = TokenDistillationLoss(DistillationConfig(0.2, 4.0),
                                 token_classification_loss)
    again = TokenDistillationLoss.from_config(loss.get_config())
    assert again.config == loss.config
    assert again.hard_loss is token_classification_loss
