"""A Keras `Dense` layer's computation in the form TensorFlow fuses."""

import keras
from keras import ops


def bias_add(x, bias):
    """`x + bias` over the last axis, as TensorFlow's BiasAdd op there."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        # BiasAdd, not AddV2: with the bias read from a variable, TensorFlow's
        # oneDNN rewrite fuses MatMul + BiasAdd (+ GELU) only in this form.
        return tf.nn.bias_add(x, bias)
    return x + bias


def add_residual(outputs, residual):
    """`outputs + residual` in `residual`'s dtype. On TensorFlow, when both
    have one dtype, as AddN: TensorFlow's oneDNN rewrite fuses a two-input
    AddN after MatMul + BiasAdd into the matmul's kernel (the add becomes
    its sum post-op); it leaves AddV2 a separate pass over the rows.

    Args:
      outputs: [tokens, units], e.g. a `fused_matmul` result used nowhere
        else (a second consumer, even a Shape, prevents the fusion).
      residual: [tokens, units].

    Returns:
      [tokens, units] in `residual`'s dtype.
    """
    if (keras.backend.backend() == "tensorflow"
            and outputs.dtype == residual.dtype):
        import tensorflow as tf

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

    Measured (CPU time, MiniLM's [32, 50, 384] x [384, 1536] with exact
    GELU): float32 27.9 -> 21.6 ms, bfloat16 36.3 -> 12.6 ms (an unfused
    bfloat16 GELU costs twice the matmul).

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
