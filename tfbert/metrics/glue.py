"""GLUE metrics over a whole evaluation set (never averaged per batch)."""

import numpy as np


def accuracy(labels, predictions):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    return float(np.mean(labels == predictions))


def f1(labels, predictions, positive=1):
    """Binary F1 of the `positive` class (MRPC, QQP)."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    true_positive = np.sum((predictions == positive) & (labels == positive))
    predicted = np.sum(predictions == positive)
    actual = np.sum(labels == positive)
    if predicted == 0 or actual == 0:
        return 0.0
    precision, recall = true_positive / predicted, true_positive / actual
    if precision + recall == 0:
        return 0.0
    return float(2 * precision * recall / (precision + recall))


def matthews_corr(labels, predictions):
    """Matthews correlation of binary labels (CoLA); 0 when undefined."""
    labels = np.asarray(labels).astype(bool)
    predictions = np.asarray(predictions).astype(bool)
    tp = float(np.sum(labels & predictions))
    tn = float(np.sum(~labels & ~predictions))
    fp = float(np.sum(~labels & predictions))
    fn = float(np.sum(labels & ~predictions))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson(labels, predictions):
    x = np.asarray(labels, np.float64)
    y = np.asarray(predictions, np.float64)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
    return float(np.sum(x * y) / denominator) if denominator else 0.0


def _ranks(values):
    """1-based ranks, ties getting their average rank."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), np.float64)
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(labels, predictions):
    return pearson(_ranks(labels), _ranks(predictions))


METRICS = {"accuracy": accuracy, "f1": f1, "matthews_corr": matthews_corr,
           "pearson": pearson, "spearman": spearman}


def compute(metric_names, labels, predictions):
    """Returns {name: value} for the named metrics."""
    return {name: METRICS[name](labels, predictions) for name in metric_names}
