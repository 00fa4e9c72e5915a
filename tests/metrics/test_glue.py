"""GLUE metrics against scikit-learn and SciPy."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from tfbert.metrics import glue


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 200)
    predictions = np.where(rng.random(200) < 0.7, labels, 1 - labels)
    assert glue.accuracy(labels, predictions) == pytest.approx(
        sk.accuracy_score(labels, predictions))
    assert glue.f1(labels, predictions) == pytest.approx(
        sk.f1_score(labels, predictions))
    assert glue.matthews_corr(labels, predictions) == pytest.approx(
        sk.matthews_corrcoef(labels, predictions))


def test_degenerate_predictions():
    labels = np.array([0, 1, 1, 0])
    constant = np.zeros(4, int)
    assert glue.f1(labels, constant) == 0.0
    assert glue.matthews_corr(labels, constant) == sk.matthews_corrcoef(
        labels, constant) == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    labels = np.round(rng.random(300) * 5, 1)  # many ties, like STS-B
    predictions = labels + rng.normal(0, 1, 300)
    predictions[:50] = np.round(predictions[:50])
    assert glue.pearson(labels, predictions) == pytest.approx(
        stats.pearsonr(labels, predictions)[0], abs=1e-12)
    assert glue.spearman(labels, predictions) == pytest.approx(
        stats.spearmanr(labels, predictions)[0], abs=1e-12)
