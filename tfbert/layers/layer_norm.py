"""Layer normalization over the hidden axis with a memory-lean gradient."""

import keras
import tensorflow as tf


def _normalize(x, gamma, beta, epsilon):
    """`(x - mean) / sqrt(var + epsilon) * gamma + beta` over the last axis.

    x: float32 [..., H]; gamma, beta: float32 [H]. The backward pass keeps
    the normalized input [..., H] and 1/std [..., 1] only; autodiff of the
    same formula keeps about four tensors of x's size."""

    @tf.custom_gradient
    def normalize(x, gamma, beta):
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)
        variance = tf.reduce_mean(tf.math.squared_difference(x, mean),
                                  axis=-1, keepdims=True)
        inverse_std = tf.math.rsqrt(variance + epsilon)
        normalized = (x - mean) * inverse_std

        def gradient(upstream):
            leading_axes = list(range(len(upstream.shape) - 1))
            d_gamma = tf.reduce_sum(upstream * normalized, axis=leading_axes)
            d_beta = tf.reduce_sum(upstream, axis=leading_axes)
            d_normalized = upstream * gamma
            d_x = inverse_std * (
                d_normalized
                - tf.reduce_mean(d_normalized, axis=-1, keepdims=True)
                - normalized * tf.reduce_mean(d_normalized * normalized,
                                              axis=-1, keepdims=True))
            return d_x, d_gamma, d_beta

        return normalized * gamma + beta, gradient

    return normalize(x, gamma, beta)


@keras.saving.register_keras_serializable(package="tfbert")
class LayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` over the last axis with a scale
    (`gamma`) and an offset (`beta`), computed in float32, whose gradient
    keeps only the normalized input and 1/std instead of the four or so
    tensors of the input's size that autodiff of Keras's formula keeps.

    Call args:
      inputs: [..., H] of any float dtype.

    Returns:
      [..., H] in the layer's compute dtype (give it `dtype="float32"` to
      keep float32 under mixed precision, as BERT's residual stream does).
    """

    def __init__(self, epsilon=1e-12, **kwargs):
        # from_config passes back the parent's keys; only their defaults are
        # supported.
        kwargs.setdefault("axis", -1)
        super().__init__(epsilon=epsilon, **kwargs)
        if (self.axis not in (-1, [-1]) or not self.center or not self.scale
                or self.rms_scaling):
            raise ValueError("LayerNorm normalizes the last axis with a scale "
                             "and an offset; use keras.layers."
                             "LayerNormalization for other settings")

    def call(self, inputs):
        outputs = _normalize(
            tf.cast(inputs, "float32"),
            tf.cast(tf.convert_to_tensor(self.gamma), "float32"),
            tf.cast(tf.convert_to_tensor(self.beta), "float32"),
            self.epsilon)
        return tf.cast(outputs, self.compute_dtype)
