"""Pair classification with sentence embeddings: is a pair a paraphrase /
duplicate (label 1) or not (0), judged by whether its cosine reaches a
threshold. The metrics take the best threshold on the evaluation set (as
sentence-transformers' BinaryClassificationEvaluator does)."""

import numpy as np

from tfbert.metrics.embedding_similarity import cosine_of_pairs


def _cuts(scores, labels):
    """Scores sorted high to low and, at each cut between distinct scores
    (everything above it predicted 1), the count predicted 1, the true
    positives among them and the threshold: the midpoint to the next lower
    score (the lowest score itself at the last cut)."""
    scores = np.asarray(scores, np.float64)
    labels = np.asarray(labels).astype(int)
    if not set(np.unique(labels)) <= {0, 1}:
        raise ValueError("pair labels must be 0 or 1")
    order = np.argsort(-scores, kind="stable")
    scores, labels = scores[order], labels[order]
    ends = np.flatnonzero(np.append(scores[1:] != scores[:-1], True))
    predicted = ends + 1
    true_positives = np.cumsum(labels)[ends]
    following = np.append(scores[ends[:-1] + 1], scores[-1])
    thresholds = np.where(predicted < len(scores),
                          (scores[ends] + following) / 2, scores[ends])
    return predicted, true_positives, thresholds, labels


def pair_classification_metrics(scores, labels):
    """Accuracy and F1 at their best thresholds, and average precision.

    Args:
      scores: float [n], higher = more similar (cosines).
      labels: int [n] 0/1.

    Returns:
      dict: `accuracy`, `accuracy_threshold`, `f1`, `f1_threshold`,
      `precision` and `recall` (at the F1 threshold), `average_precision`
      (sklearn's definition: precision at each distinct score weighted by
      the recall it adds).
    """
    predicted, tp, thresholds, labels = _cuts(scores, labels)
    count, positives = len(labels), int(labels.sum())
    negatives = count - positives
    # Predicting every pair 0 is a candidate too.
    correct = tp + (negatives - (predicted - tp))
    best = int(np.argmax(correct))
    accuracy, accuracy_threshold = correct[best] / count, thresholds[best]
    if negatives / count >= accuracy:
        accuracy = negatives / count
        accuracy_threshold = float(np.nextafter(np.max(scores), np.inf))
    f1 = np.where(tp > 0, 2 * tp / (predicted + positives), 0.0)
    best_f1 = int(np.argmax(f1))
    precision = tp / predicted
    recall = tp / max(positives, 1)
    previous_recall = np.concatenate([[0.0], recall[:-1]])
    return {
        "accuracy": float(accuracy),
        "accuracy_threshold": float(accuracy_threshold),
        "f1": float(f1[best_f1]),
        "f1_threshold": float(thresholds[best_f1]),
        "precision": float(precision[best_f1]) if tp[best_f1] else 0.0,
        "recall": float(recall[best_f1]) if tp[best_f1] else 0.0,
        "average_precision": float(np.sum((recall - previous_recall)
                                          * precision)),
    }


class PairClassificationEvaluator:
    """Embeds labelled text pairs with a model and classifies them by
    cosine.

    Args:
      texts_a, texts_b: lists of str.
      labels: 0/1 per pair.

    Call: `evaluator(model, batch_size=32)` -> the
    `pair_classification_metrics` of the pairs' cosines, keys prefixed
    `cosine_` (`cosine_accuracy`, `cosine_f1`, `cosine_average_precision`,
    ...).
    """

    def __init__(self, texts_a, texts_b, labels):
        if not len(texts_a) == len(texts_b) == len(labels):
            raise ValueError("texts_a, texts_b and labels differ in length")
        self.texts_a, self.texts_b = list(texts_a), list(texts_b)
        self.labels = np.asarray(labels).astype(int)

    def __call__(self, model, batch_size=32):
        cosines = cosine_of_pairs(
            model.encode(self.texts_a, batch_size=batch_size),
            model.encode(self.texts_b, batch_size=batch_size))
        return {f"cosine_{name}": value for name, value in
                pair_classification_metrics(cosines, self.labels).items()}
