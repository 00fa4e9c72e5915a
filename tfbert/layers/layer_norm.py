"""Layer normalization over the hidden axis with a memory-lean gradient."""

import keras
from keras import ops


def _normalize(x, gamma, beta, epsilon):
    """`(x - mean) / sqrt(var + epsilon) * gamma + beta` over the last axis.

    x: float32 [..., H]; gamma, beta: float32 [H]. The backward pass keeps
    the normalized input [..., H] and 1/std [..., 1] only; autodiff of the
    same formula keeps about four tensors of x's size."""

    @ops.custom_gradient
    def normalize(x, gamma, beta):
        mean = ops.mean(x, axis=-1, keepdims=True)
        variance = ops.mean(ops.square(x - mean), axis=-1, keepdims=True)
        inverse_std = ops.rsqrt(variance + epsilon)
        normalized = (x - mean) * inverse_std

        def gradient(*args, upstream=None):
            if upstream is None:  # TensorFlow and JAX pass it positionally.
                (upstream,) = args
            leading_axes = tuple(range(len(upstream.shape) - 1))
            d_gamma = ops.sum(upstream * normalized, axis=leading_axes)
            d_beta = ops.sum(upstream, axis=leading_axes)
            d_normalized = upstream * gamma
            d_x = inverse_std * (
                d_normalized
                - ops.mean(d_normalized, axis=-1, keepdims=True)
                - normalized * ops.mean(d_normalized * normalized,
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
            ops.cast(inputs, "float32"),
            ops.cast(self.gamma.value, "float32"),
            ops.cast(self.beta.value, "float32"),
            self.epsilon)
        return ops.cast(outputs, self.compute_dtype)
