"""Embedding distillation: regress a student's embeddings onto a
teacher's (Reimers and Gurevych 2020, "Making Monolingual Sentence
Embeddings Multilingual")."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tfbert")
class EmbeddingMSELoss(keras.losses.Loss):
    """Mean squared error between the student's embeddings `y_pred`
    (float32 [batch, k, D] or [batch, D]) and the teacher's `y_true` (the
    same shape), over every column and dimension.

    Returns:
      float32 [batch] per-example mean squared errors.
    """

    def __init__(self, name="embedding_mse", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        y_true = ops.reshape(ops.cast(y_true, "float32"),
                             ops.shape(y_pred))
        error = ops.square(y_pred - y_true)
        return ops.mean(ops.reshape(error, [ops.shape(error)[0], -1]),
                        axis=1)
