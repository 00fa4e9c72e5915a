"""Triplet loss (Schroff et al. 2015; SBERT's triplet objective)."""

import keras
from keras import ops

from tfbert.losses.distances import (check_metric, columns,
                                     pairwise_distance)


@keras.saving.register_keras_serializable(package="tfbert")
class TripletLoss(keras.losses.Loss):
    """`max(d(a, p) - d(a, n) + margin, 0)`: the negative must be at least
    `margin` further from the anchor than the positive.

    `y_pred`: float32 [batch, 3, D] (anchor, positive, negative); `y_true`
    is ignored.

    Args:
      margin: sentence-transformers' default 5 (for euclidean distance).
      distance_metric: "euclidean", "cosine" (1 - cosine) or "manhattan".

    Returns:
      float32 [batch] per-example losses.
    """

    def __init__(self, margin=5.0, distance_metric="euclidean",
                 name="triplet", **kwargs):
        super().__init__(name=name, **kwargs)
        self.margin = float(margin)
        self.distance_metric = check_metric(distance_metric)

    def call(self, y_true, y_pred):
        anchor, positive, negative = columns(y_pred, 3, type(self).__name__)
        d_positive = pairwise_distance(anchor, positive, self.distance_metric)
        d_negative = pairwise_distance(anchor, negative, self.distance_metric)
        return ops.relu(d_positive - d_negative + self.margin)

    def get_config(self):
        return {**super().get_config(), "margin": self.margin,
                "distance_metric": self.distance_metric}
