"""Semantic textual similarity of sentence embeddings: correlation of the
cosine of each pair with gold scores (STS-B's evaluation of SBERT)."""

import numpy as np

from tfbert.metrics.glue import pearson, spearman


def cosine_of_pairs(embeddings_a, embeddings_b):
    """Cosine of row i of a with row i of b: float64 [n]."""
    a = np.asarray(embeddings_a, np.float64)
    b = np.asarray(embeddings_b, np.float64)
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return np.sum(a * b, axis=1)


def sts_metrics(embeddings_a, embeddings_b, gold_scores):
    """`{"pearson_cosine", "spearman_cosine"}`: Pearson and Spearman
    correlation of the pairs' cosines (float [n, D] each) with the gold
    scores [n]."""
    cosines = cosine_of_pairs(embeddings_a, embeddings_b)
    return {"pearson_cosine": pearson(gold_scores, cosines),
            "spearman_cosine": spearman(gold_scores, cosines)}


class STSEvaluator:
    """Embeds text pairs with a model and scores them against gold scores.

    Args:
      texts_a, texts_b: lists of str (the pairs).
      scores: the gold similarity of each pair (any scale).

    Call: `evaluator(model, batch_size=32)` with a `SentenceEncoder` ->
    `sts_metrics` dict.
    """

    def __init__(self, texts_a, texts_b, scores):
        if not len(texts_a) == len(texts_b) == len(scores):
            raise ValueError("texts_a, texts_b and scores differ in length")
        self.texts_a, self.texts_b = list(texts_a), list(texts_b)
        self.scores = np.asarray(scores, np.float64)

    def __call__(self, model, batch_size=32):
        return sts_metrics(
            model.encode(self.texts_a, batch_size=batch_size),
            model.encode(self.texts_b, batch_size=batch_size), self.scores)
