"""Activation functions by the names `BertConfig.hidden_act` uses (and tanh,
for poolers)."""

import math

import keras
from keras import ops


def gelu_erf(x):
    """GELU(x) = 0.5 * x * (1 + erf(x / sqrt(2))), without a custom
    gradient, in the op order that suits
    TensorFlow's CPU kernels.

    float32: (erf(x / sqrt(2)) + 1) * (x * 0.5), one of the op sequences
    TensorFlow's oneDNN rewrite fuses into a preceding matmul + bias add (other
    orders of the same terms are not fused); without oneDNN (TensorFlow's
    default on CPUs without AVX-512) Eigen computes it faster than
    `tf.nn.gelu`'s erfc form. 16-bit types keep the erfc form,
    whose fusion is the one verified on CPUs with bfloat16 instructions."""
    if keras.backend.standardize_dtype(x.dtype) != "float32":
        return ops.gelu(x, approximate=False)
    return (ops.erf(x * (1.0 / math.sqrt(2.0))) + 1.0) * (x * 0.5)


@ops.custom_gradient
def _gelu_exact(x):
    # Autodiff of 0.5 * x * (1 + erf(x / sqrt(2))) keeps three intermediates
    # of x's size alive until the backward pass (x / sqrt(2), 0.5 * x and
    # 1 + erf(...)): three [batch, seq, intermediate] tensors per layer, about
    # a seventh of a BERT training step's peak memory. This gradient keeps
    # only x and recomputes the derivative Phi(x) + x * phi(x).
    def gradient(*args, upstream=None):
        if upstream is None:  # TensorFlow and JAX pass it positionally.
            (upstream,) = args
        cdf = 0.5 * (1.0 + ops.erf(x * (1.0 / math.sqrt(2.0))))
        pdf = ops.exp(-0.5 * ops.square(x)) * (1.0 / math.sqrt(2.0 * math.pi))
        return upstream * (cdf + x * pdf)

    return gelu_erf(x), gradient


def gelu(x):
    """GELU in its exact erf form, as Google's and HF's BERT compute it.

    The values of `keras.activations.gelu(x, approximate=False)` (within
    float32 rounding: it uses erfc); its gradient keeps only `x` for the
    backward pass."""
    return _gelu_exact(ops.convert_to_tensor(x))


def gelu_approximate(x):
    """GELU in its tanh approximation (TF Hub, Model Garden, keras-hub,
    HF's `gelu_new`)."""
    return keras.activations.gelu(x, approximate=True)


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_approximate": gelu_approximate,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
}


def get_activation(name):
    """Returns the activation function called `name`."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown activation {name!r}; expected one of {sorted(_ACTIVATIONS)}"
        ) from None
