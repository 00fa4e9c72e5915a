"""A Keras `Dense` layer's computation in the form TensorFlow fuses."""

import tensorflow as tf
from keras import ops


def bias_add(x, bias):
    """`x + bias` over the last axis, as TensorFlow's BiasAdd op: with the
    bias read from a variable, TensorFlow's oneDNN rewrite fuses MatMul +
    BiasAdd (+ GELU) only in this form, not with AddV2."""
    return tf.nn.bias_add(x, bias)


def add_residual(outputs, residual):
    """`outputs + residual` in `residual`'s dtype. When both have one dtype,
    as AddN: TensorFlow's oneDNN rewrite fuses a two-input
    AddN after MatMul + BiasAdd into the matmul's kernel (the add becomes
    its sum post-op); it leaves AddV2 a separate pass over the rows.

    Args:
      outputs: [tokens, units], e.g. a `fused_matmul` result used nowhere
        else (a second consumer, even a Shape, prevents the fusion).
      residual: [tokens, units].

    Returns:
      [tokens, units] in `residual`'s dtype.
    """
    if outputs.dtype == residual.dtype:
        return tf.math.add_n([outputs, residual])
    return ops.cast(outputs, residual.dtype) + residual


def fused_matmul(rows, kernel, bias, activation=None):
    """`activation(rows @ kernel + bias)` as one 2-D matmul, a bias add and
    the activation: the pattern TensorFlow's oneDNN rewrite turns into one
    fused kernel (see `fused_dense`).

    Args:
      rows: [tokens, in_features], in the dtype to compute in.
      kernel: [in_features, units]; bias: [units] (cast to `rows`' dtype).
      activation: None or an elementwise function (without custom gradient).

    Returns:
      [tokens, units] in `rows`' dtype.
    """
    outputs = ops.matmul(rows, ops.cast(kernel, rows.dtype))
    outputs = bias_add(outputs, ops.cast(bias, rows.dtype))
    return outputs if activation is None else activation(outputs)


def fused_dense(dense, inputs, activation=None, residual=None):
    """`activation(inputs @ kernel + bias) [+ residual]` for a built
    `keras.layers.Dense`
    (the layer's own activation is not applied: pass it, or a function of
    the same values, as `activation`), as one 2-D matmul,
    a bias add and the activation: the pattern TensorFlow's oneDNN rewrite
    turns into one fused kernel. Keras's Dense hides it (its tensordot puts a
    reshape between the matmul and the bias, and it adds the bias with
    AddV2), and so does a custom gradient (tfbert's memory-lean GELU). For
    inference graphs; training keeps the Dense layers and lean gradients.
    The gain is largest in bfloat16, where an unfused GELU costs more than
    the matmul (figures: benchmarks/RESULTS.md).

    Args:
      dense: a built `keras.layers.Dense` with a bias.
      inputs: [..., in_features].
      activation: None or an elementwise function (without custom gradient).
      residual: optional [..., units] added to the outputs (`add_residual`:
        fused into the matmul when it has the compute dtype).

    Returns:
      [..., units] in the layer's compute dtype (`residual`'s with one).
    """
    shape = ops.shape(inputs)
    rows = ops.reshape(ops.cast(inputs, dense.compute_dtype), (-1, shape[-1]))
    outputs = fused_matmul(rows, dense.kernel, dense.bias, activation)
    if residual is not None:
        outputs = add_residual(outputs, ops.reshape(residual, (-1, dense.units)))
    return ops.reshape(outputs, (*shape[:-1], dense.units))
