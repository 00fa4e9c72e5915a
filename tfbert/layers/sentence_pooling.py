"""Sentence pooling: one vector per sequence from the token vectors."""

import keras
from keras import ops

POOLINGS = ("mean", "cls", "max")


@keras.saving.register_keras_serializable(package="tfbert")
class SentencePooling(keras.layers.Layer):
    """Pools `sequence_output` over the real tokens, as sentence-transformers'
    `Pooling` module does.

      * "mean": the average over tokens with `input_mask` 1 (special tokens
        included).
      * "cls": the first position (not the tanh pooler).
      * "max": the element-wise maximum over tokens with `input_mask` 1.

    Args:
      mode: one of `POOLINGS`.

    Call args:
      sequence_output: float [batch, seq, H] (or [batch, seq, ..., H], e.g.
        several layers' features stacked).
      input_mask: int [batch, seq], 1 on real tokens.

    Returns:
      float32 [batch, H] (resp. [batch, ..., H]).
    """

    def __init__(self, mode="mean", **kwargs):
        super().__init__(**kwargs)
        if mode not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got "
                             f"{mode!r}")
        self.mode = mode
        self.built = True

    def call(self, sequence_output, input_mask):
        sequence_output = ops.cast(sequence_output, "float32")
        if self.mode == "cls":
            return sequence_output[:, 0]
        mask = ops.cast(input_mask, "float32")
        mask = ops.reshape(mask, ops.shape(mask)
                           + (1,) * (len(sequence_output.shape) - 2))
        if self.mode == "max":
            # A padded position must never win, whatever its value.
            return ops.max(ops.where(mask > 0, sequence_output,
                                     float("-inf")), axis=1)
        return (ops.sum(sequence_output * mask, axis=1)
                / ops.maximum(ops.sum(mask, axis=1), 1e-9))

    def compute_output_shape(self, sequence_shape, mask_shape=None):
        return (sequence_shape[0], *sequence_shape[2:])

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}


@keras.saving.register_keras_serializable(package="tfbert")
class L2Normalization(keras.layers.Layer):
    """Scales each vector to unit L2 norm (sentence-transformers'
    `Normalize`: `x / max(||x||, 1e-12)`).

    Call args:
      x: float32 [batch, H].

    Returns:
      float32 [batch, H].
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built = True

    def call(self, x):
        norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
        return x / ops.maximum(norm, 1e-12)

    def compute_output_shape(self, input_shape):
        return input_shape
