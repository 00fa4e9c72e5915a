"""CoSENT loss (Su 2022): a ranking loss on the cosines of text pairs."""

import keras
from keras import ops

from tfbert.losses.distances import columns, pairwise_cosine


@keras.saving.register_keras_serializable(package="tfbert")
class CoSENTLoss(keras.losses.Loss):
    """`log(1 + sum over pairs (i, j) with label_i > label_j of
    exp(scale * (cos_j - cos_i)))`: every pair scored higher by the gold
    labels should have the larger cosine.

    `y_pred`: float32 [batch, 2, D]; `y_true`: float32 [batch] scores (any
    scale: only their order counts). The batch is one term (the loss is not
    a mean of per-example values): the loss is computed in O(batch^2).

    Args:
      scale: the inverse temperature (sentence-transformers: 20).

    Returns:
      a float32 scalar.
    """

    def __init__(self, scale=20.0, name="cosent", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        u, v = columns(y_pred, 2, type(self).__name__)
        scores = self.scale * pairwise_cosine(u, v)
        labels = ops.reshape(ops.cast(y_true, "float32"), [-1])
        # differences[i, j] = score_j - score_i, kept where label_i > label_j.
        differences = scores[None, :] - scores[:, None]
        ordered = labels[:, None] > labels[None, :]
        differences = ops.where(ordered, differences, float("-inf"))
        terms = ops.concatenate([ops.zeros([1]),
                                 ops.reshape(differences, [-1])], axis=0)
        return ops.logsumexp(terms)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}
