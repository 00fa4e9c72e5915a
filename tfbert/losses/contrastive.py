"""Contrastive losses on labelled pairs (Hadsell et al. 2006), plain and
on the batch's hard pairs only ("online")."""

import keras
from keras import ops

from tfbert.losses.distances import (check_metric, columns,
                                     pairwise_distance)


class _PairDistanceLoss(keras.losses.Loss):
    """Base: the distance of each pair of `y_pred` [batch, 2, D] with its
    0/1 label `y_true` [batch]."""

    def __init__(self, margin, distance_metric, name, **kwargs):
        super().__init__(name=name, **kwargs)
        self.margin = float(margin)
        self.distance_metric = check_metric(distance_metric)

    def distances_and_labels(self, y_true, y_pred):
        u, v = columns(y_pred, 2, type(self).__name__)
        return (pairwise_distance(u, v, self.distance_metric),
                ops.reshape(ops.cast(y_true, "float32"), [-1]))

    def get_config(self):
        return {**super().get_config(), "margin": self.margin,
                "distance_metric": self.distance_metric}


@keras.saving.register_keras_serializable(package="tfbert")
class ContrastiveLoss(_PairDistanceLoss):
    """`0.5 * (y d^2 + (1 - y) max(margin - d, 0)^2)`: similar pairs
    (label 1) close, dissimilar pairs (label 0) at least `margin` apart.

    Args:
      margin: sentence-transformers' default 0.5 (cosine distance).
      distance_metric: "cosine" (1 - cosine), "euclidean" or "manhattan".

    Returns:
      float32 [batch] per-example losses.
    """

    def __init__(self, margin=0.5, distance_metric="cosine",
                 name="contrastive", **kwargs):
        super().__init__(margin, distance_metric, name, **kwargs)

    def call(self, y_true, y_pred):
        d, y = self.distances_and_labels(y_true, y_pred)
        return 0.5 * (y * ops.square(d)
                      + (1.0 - y) * ops.square(ops.relu(self.margin - d)))


@keras.saving.register_keras_serializable(package="tfbert")
class OnlineContrastiveLoss(_PairDistanceLoss):
    """The contrastive loss summed over the batch's hard pairs only: the
    negatives (label 0) closer than the farthest positive, and the
    positives (label 1) farther than the closest negative (without any
    positive / negative, the mean distance of the others stands in). Pairs
    with any other label are ignored.

    Returns:
      a float32 scalar (a sum over the batch, as sentence-transformers').
    """

    def __init__(self, margin=0.5, distance_metric="cosine",
                 name="online_contrastive", **kwargs):
        super().__init__(margin, distance_metric, name, **kwargs)

    def call(self, y_true, y_pred):
        d, y = self.distances_and_labels(y_true, y_pred)
        negative, positive = y == 0.0, y == 1.0
        num_negative = ops.sum(ops.cast(negative, "float32"))
        num_positive = ops.sum(ops.cast(positive, "float32"))

        def masked_mean(mask, count):
            return ops.sum(ops.where(mask, d, 0.0)) / ops.maximum(count, 1.0)

        farthest_positive = ops.where(
            num_positive > 0, ops.max(ops.where(positive, d, float("-inf"))),
            masked_mean(negative, num_negative))
        closest_negative = ops.where(
            num_negative > 0, ops.min(ops.where(negative, d, float("inf"))),
            masked_mean(positive, num_positive))
        hard_negative = negative & (d < farthest_positive)
        hard_positive = positive & (d > closest_negative)
        return (ops.sum(ops.where(hard_positive, ops.square(d), 0.0))
                + ops.sum(ops.where(hard_negative,
                                    ops.square(ops.relu(self.margin - d)),
                                    0.0)))
