"""Classification metrics over a whole evaluation set: single-label
(accuracy, micro/macro F1, per-class precision/recall/F1, confusion matrix)
and multi-label (micro/macro F1, per-label F1, subset accuracy), with
per-label decision thresholds tuned for F1. An undefined precision, recall
or F1 (nothing predicted, or nothing to find) counts as 0."""

import numpy as np


def _ratio(numerator, denominator):
    return np.divide(numerator, denominator,
                     out=np.zeros(np.shape(numerator), np.float64),
                     where=np.asarray(denominator) > 0)


def _f1(true_positive, predicted, actual):
    """Precision, recall, F1 (float64 arrays) from counts."""
    precision = _ratio(true_positive, predicted)
    recall = _ratio(true_positive, actual)
    return precision, recall, _ratio(2 * true_positive, predicted + actual)


def confusion_matrix(labels, predictions, num_classes):
    """int64 [classes, classes]: row = true class, column = predicted."""
    matrix = np.zeros((num_classes, num_classes), np.int64)
    np.add.at(matrix, (np.asarray(labels), np.asarray(predictions)), 1)
    return matrix


def single_label(labels, predictions, label_names):
    """Metrics of class ids `labels` and `predictions` (int [N]).

    Returns a dict: accuracy, micro_f1, macro_f1, per_class ({name:
    {precision, recall, f1, support}}) and confusion_matrix (list of rows).
    """
    matrix = confusion_matrix(labels, predictions, len(label_names))
    true_positive = np.diag(matrix)
    predicted, actual = matrix.sum(0), matrix.sum(1)
    precision, recall, f1 = _f1(true_positive, predicted, actual)
    _, _, micro = _f1(true_positive.sum(), predicted.sum(), actual.sum())
    return {
        "accuracy": float(true_positive.sum() / max(1, matrix.sum())),
        "micro_f1": float(micro),
        "macro_f1": float(f1.mean()),
        "per_class": {name: {"precision": float(precision[i]),
                             "recall": float(recall[i]), "f1": float(f1[i]),
                             "support": int(actual[i])}
                      for i, name in enumerate(label_names)},
        "confusion_matrix": matrix.tolist(),
    }


def multi_label(labels, predicted, label_names):
    """Metrics of bool [N, labels] truth `labels` and decisions `predicted`.

    Returns a dict: micro_f1, macro_f1, subset_accuracy (rows whose whole
    label set is right) and per_label ({name: f1}).
    """
    labels, predicted = np.asarray(labels, bool), np.asarray(predicted, bool)
    true_positive = (labels & predicted).sum(0)
    _, _, f1 = _f1(true_positive, predicted.sum(0), labels.sum(0))
    _, _, micro = _f1(true_positive.sum(), predicted.sum(), labels.sum())
    return {
        "micro_f1": float(micro),
        "macro_f1": float(f1.mean()),
        "subset_accuracy": float(np.mean(np.all(labels == predicted, -1))),
        "per_label": {name: float(f1[i])
                      for i, name in enumerate(label_names)},
    }


def tune_thresholds(labels, probabilities, default=0.5):
    """Per-label thresholds (float32 [labels]) that maximize each label's F1
    on bool [N, labels] `labels` given float [N, labels] `probabilities`; a
    row is predicted positive when its probability is >= the threshold.

    The candidates are the probabilities themselves; of equally good ones
    the highest is kept. A label that no row has keeps `default`.
    """
    labels = np.asarray(labels, bool)
    probabilities = np.asarray(probabilities, np.float64)
    thresholds = np.full(labels.shape[1], default, np.float32)
    for j in range(labels.shape[1]):
        if not labels[:, j].any():
            continue
        order = np.argsort(-probabilities[:, j], kind="stable")
        scores, truth = probabilities[order, j], labels[order, j]
        # Predicting the top k rows positive: k = 1..N, at distinct scores.
        true_positive = np.cumsum(truth)
        predicted = np.arange(1, len(truth) + 1)
        last = np.r_[scores[1:] != scores[:-1], True]
        _, _, f1 = _f1(true_positive[last], predicted[last], truth.sum())
        best = np.flatnonzero(f1 == f1.max())[0]
        thresholds[j] = scores[last][best]
    return thresholds


def balanced_class_weights(class_ids, num_classes):
    """float32 [classes]: `N / (classes * count)`, so every class weighs as
    much in total (a class absent from `class_ids` gets weight 0)."""
    counts = np.bincount(np.asarray(class_ids), minlength=num_classes)
    return _ratio(np.full(num_classes, len(class_ids), np.float64),
                  num_classes * counts).astype(np.float32)
