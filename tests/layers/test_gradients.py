"""The hand-written gradients (exact GELU, LayerNorm) against torch autograd
and against TF autodiff of Keras's own formulas; what they keep for the
backward pass under JAX."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
import torch

from tfbert.inference.activations import inference_activation
from tfbert.layers import LayerNorm, get_activation

RNG = np.random.default_rng(0)


def _tf_gradients(fn, *inputs, upstream):
    inputs = [tf.convert_to_tensor(x) for x in inputs]
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        y = fn(*inputs)
    return y, tape.gradient(y, inputs, output_gradients=upstream)


def _torch_gradients(fn, *inputs, upstream):
    inputs = [torch.tensor(x, dtype=torch.float64, requires_grad=True)
              for x in inputs]
    y = fn(*inputs)
    y.backward(torch.tensor(upstream, dtype=torch.float64))
    return y.detach().numpy(), [x.grad.numpy() for x in inputs]


def test_gelu_values_and_gradient_match_torch_and_keras():
    x = np.concatenate([np.linspace(-8, 8, 401),
                        RNG.normal(0, 2, 600)]).astype(np.float32)
    upstream = RNG.normal(size=x.shape).astype(np.float32)
    gelu = get_activation("gelu")
    y, (dx,) = _tf_gradients(gelu, x, upstream=upstream)
    torch_y, (torch_dx,) = _torch_gradients(
        torch.nn.functional.gelu, x, upstream=upstream)
    np.testing.assert_allclose(y, torch_y, atol=1e-6)
    np.testing.assert_allclose(dx, torch_dx, atol=2e-6)
    keras_y, (keras_dx,) = _tf_gradients(
        lambda t: keras.activations.gelu(t, approximate=False), x,
        upstream=upstream)
    np.testing.assert_allclose(y, keras_y, atol=1e-6)
    np.testing.assert_allclose(dx, keras_dx, atol=1e-6)
    # Inference graphs use the same values without the custom gradient.
    np.testing.assert_array_equal(
        inference_activation("gelu")(tf.constant(x)), y)


@pytest.mark.parametrize("dtype, tolerance", [("float16", 4e-3),
                                              ("bfloat16", 3e-2)])
def test_gelu_gradient_in_half_precision(dtype, tolerance):
    x = tf.cast(RNG.normal(0, 2, 512), dtype)
    upstream = tf.cast(RNG.normal(size=512), dtype)
    y, (dx,) = _tf_gradients(get_activation("gelu"), x, upstream=upstream)
    assert y.dtype == dx.dtype == dtype
    _, (torch_dx,) = _torch_gradients(
        torch.nn.functional.gelu, tf.cast(x, "float64").numpy(),
        upstream=tf.cast(upstream, "float64").numpy())
    np.testing.assert_allclose(tf.cast(dx, "float64"), torch_dx,
                               atol=tolerance, rtol=tolerance)


def _layer_norm_inputs(shape):
    x = RNG.normal(1.0, 3.0, shape).astype(np.float32)
    gamma = RNG.normal(1.0, 0.5, shape[-1]).astype(np.float32)
    beta = RNG.normal(0.0, 0.5, shape[-1]).astype(np.float32)
    upstream = RNG.normal(size=shape).astype(np.float32)
    return x, gamma, beta, upstream


def _tfbert_layer_norm(gamma, beta, epsilon=1e-12, **kwargs):
    layer = LayerNorm(epsilon=epsilon, **kwargs)
    layer.build((None, gamma.shape[0]))
    layer.gamma.assign(gamma)
    layer.beta.assign(beta)
    return layer


def _variable_gradients(layer, x, upstream):
    x = tf.convert_to_tensor(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    grads = tape.gradient(
        y, [x, layer.gamma.value, layer.beta.value], output_gradients=upstream)
    return y, grads


@pytest.mark.parametrize("shape", [(7, 16), (3, 5, 24)])
def test_layer_norm_matches_torch_and_keras(shape):
    x, gamma, beta, upstream = _layer_norm_inputs(shape)
    ours = _tfbert_layer_norm(gamma, beta)
    y, grads = _variable_gradients(ours, x, upstream)

    torch_y, torch_grads = _torch_gradients(
        lambda x, g, b: torch.nn.functional.layer_norm(
            x, (shape[-1],), g, b, eps=1e-12),
        x, gamma, beta, upstream=upstream)
    np.testing.assert_allclose(y, torch_y, atol=2e-5)
    for ours_grad, torch_grad in zip(grads, torch_grads):
        np.testing.assert_allclose(ours_grad, torch_grad, rtol=1e-4,
                                   atol=1e-4)

    keras_layer = keras.layers.LayerNormalization(epsilon=1e-12)
    keras_layer.build((None, shape[-1]))
    keras_layer.gamma.assign(gamma)
    keras_layer.beta.assign(beta)
    keras_y, keras_grads = _variable_gradients(keras_layer, x, upstream)
    np.testing.assert_allclose(y, keras_y, atol=1e-5)
    for ours_grad, keras_grad in zip(grads, keras_grads):
        np.testing.assert_allclose(ours_grad, keras_grad, rtol=1e-4,
                                   atol=1e-4)


def test_layer_norm_under_xla_and_with_half_precision_input():
    x, gamma, beta, upstream = _layer_norm_inputs((4, 6, 32))
    layer = _tfbert_layer_norm(gamma, beta, epsilon=1e-6, dtype="float32")
    eager_y, eager_grads = _variable_gradients(layer, x, upstream)
    xla_y, xla_grads = tf.function(_variable_gradients, jit_compile=True)(
        layer, tf.constant(x), tf.constant(upstream))
    np.testing.assert_allclose(xla_y, eager_y, atol=1e-5)
    for xla_grad, eager_grad in zip(xla_grads, eager_grads):
        np.testing.assert_allclose(xla_grad, eager_grad, rtol=1e-4, atol=1e-4)

    # BERT feeds float16 sums into float32 LayerNorms under mixed_float16.
    half = tf.cast(x, "float16")
    y, (dx, _, _) = _variable_gradients(layer, half, upstream)
    assert y.dtype == "float32" and dx.dtype == "float16"
    reference, _ = _variable_gradients(layer, tf.cast(half, "float32"),
                                       upstream)
    np.testing.assert_allclose(y, reference, atol=1e-6)


def test_layer_norm_config_round_trip_and_unsupported_settings():
    layer = LayerNorm(epsilon=1e-7, dtype="float32", name="norm")
    clone = LayerNorm.from_config(layer.get_config())
    assert (clone.epsilon, clone.name, clone.dtype) == (1e-7, "norm", "float32")
    for settings in ({"axis": 1}, {"center": False}, {"scale": False},
                     {"rms_scaling": True}):
        with pytest.raises(ValueError, match="normalizes the last axis"):
            LayerNorm(**settings)


_RESIDUALS_SCRIPT = """
import jax, jax.numpy as jnp, keras
from jax.ad_checkpoint import print_saved_residuals
from tfbert.layers import LayerNorm, get_activation
x = jnp.ones((4, 8, 32))
ours, theirs = LayerNorm(), keras.layers.LayerNormalization(epsilon=1e-12)
ours.build((None, 32)); theirs.build((None, 32))
functions = {
    "gelu": get_activation("gelu"),
    "keras_gelu": lambda t: keras.activations.gelu(t, approximate=False),
    "layer_norm": ours, "keras_layer_norm": theirs}
for name, f in functions.items():
    print("==", name)
    print_saved_residuals(lambda t: jnp.sum(f(t) * 1.5), x)
"""


@pytest.mark.slow
def test_backward_pass_keeps_only_what_the_gradients_need_under_jax():
    """GELU keeps only its input, LayerNorm only the normalized input and
    1/std ([4, 8, 32] and [4, 8, 1]); Keras's formulas keep more."""
    pytest.importorskip("jax")
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    result = subprocess.run(
        [sys.executable, "-c", _RESIDUALS_SCRIPT], capture_output=True,
        text=True, timeout=300, cwd=root,
        env=dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu",
                 TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=root))
    assert result.returncode == 0, result.stderr[-3000:]
    saved = {}
    for line in result.stdout.splitlines():
        if line.startswith("== "):
            name = line[3:]
            saved[name] = []
        elif line.startswith("f32["):
            saved[name].append(line.split()[0])
    full = "f32[4,8,32]"
    assert saved["gelu"].count(full) == 1
    assert saved["keras_gelu"].count(full) > 1
    assert saved["layer_norm"].count(full) == 1
    assert saved["layer_norm"].count("f32[4,8,1]") == 1
    assert saved["keras_layer_norm"].count(full) > 1
