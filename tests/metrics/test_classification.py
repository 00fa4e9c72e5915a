"""Classification metrics against scikit-learn's."""

import numpy as np
import pytest
from sklearn import metrics as sk
from sklearn.utils.class_weight import compute_class_weight

from tfbert.metrics import classification


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_single_label_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    # Class 3 is never predicted, class 4 never true: undefined P/R -> 0.
    labels = rng.integers(0, 4, 300)
    predictions = np.where(rng.random(300) < 0.6, labels,
                           rng.integers(0, 3, 300))
    predictions[:5] = 4
    names = ["a", "b", "c", "d", "e"]
    got = classification.single_label(labels, predictions, names)
    ids = list(range(5))
    assert got["accuracy"] == pytest.approx(sk.accuracy_score(labels,
                                                              predictions))
    for average in ("micro", "macro"):
        assert got[f"{average}_f1"] == pytest.approx(sk.f1_score(
            labels, predictions, labels=ids, average=average,
            zero_division=0))
    precision, recall, f1, support = sk.precision_recall_fscore_support(
        labels, predictions, labels=ids, zero_division=0)
    for i, name in enumerate(names):
        assert got["per_class"][name] == pytest.approx({
            "precision": precision[i], "recall": recall[i], "f1": f1[i],
            "support": support[i]})
    assert got["confusion_matrix"] == sk.confusion_matrix(
        labels, predictions, labels=ids).tolist()


def test_multi_label_matches_sklearn():
    rng = np.random.default_rng(3)
    labels = rng.random((200, 6)) < 0.3
    labels[:, 5] = False  # a label no row has
    predicted = np.where(rng.random((200, 6)) < 0.7, labels,
                         rng.random((200, 6)) < 0.3)
    names = list("uvwxyz")
    got = classification.multi_label(labels, predicted, names)
    for average in ("micro", "macro"):
        assert got[f"{average}_f1"] == pytest.approx(sk.f1_score(
            labels, predicted, average=average, zero_division=0))
    assert got["subset_accuracy"] == pytest.approx(
        sk.accuracy_score(labels, predicted))
    per_label = sk.f1_score(labels, predicted, average=None, zero_division=0)
    assert got["per_label"] == pytest.approx(dict(zip(names, per_label)))


def test_tuned_thresholds_are_the_best_by_brute_force():
    rng = np.random.default_rng(4)
    labels = rng.random((120, 4)) < 0.4
    labels[:, 3] = False
    # Probabilities rounded to create ties.
    probabilities = np.round(np.clip(
        labels * 0.3 + rng.random((120, 4)) * 0.7, 0, 1), 2).astype(np.float32)
    thresholds = classification.tune_thresholds(labels, probabilities)
    assert thresholds[3] == 0.5
    for j in range(3):
        candidates = np.unique(probabilities[:, j])
        scores = [sk.f1_score(labels[:, j], probabilities[:, j] >= t,
                              zero_division=0) for t in candidates]
        best = max(scores)
        assert sk.f1_score(labels[:, j], probabilities[:, j] >= thresholds[j],
                           zero_division=0) == pytest.approx(best)
        assert thresholds[j] == max(
            t for t, s in zip(candidates, scores) if s == pytest.approx(best))


def test_balanced_class_weights_match_sklearn():
    ids = np.array([0] * 70 + [1] * 20 + [2] * 10)
    np.testing.assert_allclose(
        classification.balanced_class_weights(ids, 3),
        compute_class_weight("balanced", classes=np.arange(3), y=ids),
        rtol=1e-6)
