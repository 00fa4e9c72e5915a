"""Cosine similarity loss (SBERT's regression objective, Reimers and
Gurevych 2019)."""

import keras
from keras import ops

from tfbert.losses.distances import columns, pairwise_cosine


@keras.saving.register_keras_serializable(package="tfbert")
class CosineSimilarityLoss(keras.losses.Loss):
    """Squared error between `cos(u, v)` and the gold score.

    `y_pred`: float32 [batch, 2, D] (the two texts); `y_true`: float32
    [batch] scores, usually in [0, 1] (STS-B's 0-5 divided by 5).

    Returns:
      float32 [batch] per-example squared errors.
    """

    def __init__(self, name="cosine_similarity", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        u, v = columns(y_pred, 2, type(self).__name__)
        return ops.square(pairwise_cosine(u, v)
                          - ops.reshape(ops.cast(y_true, "float32"), [-1]))
