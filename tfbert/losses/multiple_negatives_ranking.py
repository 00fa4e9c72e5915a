"""Multiple-negatives ranking loss (in-batch negatives; Henderson et al.
2017, "Efficient Natural Language Response Suggestion")."""

import keras
from keras import ops

from tfbert.losses.distances import columns, cosine_matrix


@keras.saving.register_keras_serializable(package="tfbert")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """Cross-entropy of picking each anchor's positive among every
    candidate in the batch: all positives and all hard negatives, scored by
    `scale * cosine`.

    `y_pred`: float32 [batch, k, D], columns (anchor, positive, negative_1,
    ..., negative_{k-2}); `y_true` is ignored. With `symmetric`, the loss
    averages, per example, the log-normaliser of anchor -> candidates and of
    positive -> anchors (sentence-transformers'
    MultipleNegativesSymmetricRankingLoss).

    Every other example of the batch serves as a negative, so a batch must
    not hold the same text twice (see
    `tfbert.data.sentence_batching.no_duplicate_batches`) and needs at least
    two examples.

    Args:
      scale: the inverse temperature (sentence-transformers: 20).
      symmetric: add the positive -> anchor direction.

    Returns:
      float32 [batch] per-example losses (the mean is the batch loss).
    """

    uses_in_batch_negatives = True

    def __init__(self, scale=20.0, symmetric=False,
                 name="multiple_negatives_ranking", **kwargs):
        super().__init__(name=name, **kwargs)
        if not scale > 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        self.scale = float(scale)
        self.symmetric = bool(symmetric)

    def call(self, y_true, y_pred):
        texts = columns(y_pred, owner=type(self).__name__)
        if len(texts) < 2:
            raise ValueError("MultipleNegativesRankingLoss takes at least 2 "
                             "text columns (anchor, positive)")
        anchors, positives = texts[0], texts[1]
        candidates = ops.concatenate(texts[1:], axis=0)
        scores = self.scale * cosine_matrix(anchors, candidates)
        positive = ops.diagonal(scores[:, :ops.shape(anchors)[0]])
        log_z = ops.logsumexp(scores, axis=1)
        if self.symmetric:
            backward = self.scale * cosine_matrix(positives, anchors)
            log_z = 0.5 * (log_z + ops.logsumexp(backward, axis=1))
        return log_z - positive

    def get_config(self):
        return {**super().get_config(), "scale": self.scale,
                "symmetric": self.symmetric}
