"""The distillation loss against a numpy re-computation on one batch."""

import numpy as np
import pytest

from tfbert.training.distillation import (
    DistillationConfig, TaskDistillationLoss, soft_target_loss,
    with_teacher_outputs)


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
