"""`MultiHeadSelfAttention`'s computation for TensorFlow inference, from the
layer's own weights: fused projections, packed tokens, first-token queries
and, on small problems, TensorFlow's own kernels."""

import math

import tensorflow as tf
from keras import ops

from tfbert.inference.fused_dense import fused_dense
from tfbert.layers.attention import scaled_dot_product
from tfbert.layers.masking import padding_bias

# Attention problems with at most this many scores per head (batch x
# queries x keys) run on TensorFlow's own kernels instead of oneDNN's (see
# `_context`). The crossover depends on the CPU; this one was measured on
# one (benchmarks/RESULTS.md, "The serving path's design choices").
SMALL_ATTENTION_SCORES = 1024


def _small_problem(query, key):
    """Whether an attention problem has at most `SMALL_ATTENTION_SCORES`
    scores per head (bool scalar, computed at run time)."""
    query_shape, key_shape = tf.shape(query), tf.shape(key)
    scores = query_shape[0] * query_shape[2] * key_shape[2]
    return scores <= SMALL_ATTENTION_SCORES


def _context(query, key, value, bias, small):
    """`softmax(query @ key^T + bias) @ value`, with kernels chosen by size
    at run time.

    With oneDNN (TensorFlow's default on CPUs with AVX512_VNNI, AVX512_BF16
    or AMX) batch matmuls and softmax run as oneDNN kernels, each with a
    fixed cost per call: on one sentence that cost is most of the attention
    core's time, and TensorFlow's own kernels (`BatchMatMulV3` and
    `LogSoftmax`, which oneDNN does not take over) do the same work faster.
    On larger problems oneDNN's are faster, so a `tf.cond` picks per call:
    up to `SMALL_ATTENTION_SCORES` the small kernels.

    Args:
      query: [batch, N, q, head]; key, value: [batch, N, k, head], float32
        or bfloat16.
      bias: float32 [batch, 1, 1, k], added to the float32 scores.
      small: bool scalar, `_small_problem(query, key)`.

    Returns:
      [batch, N, q, head] in the dtype of `value`.
    """
    dtype = value.dtype

    def small_kernels():
        scores = tf.raw_ops.BatchMatMulV3(x=query, y=key, Tout=dtype,
                                          adj_y=True)
        probs = tf.exp(tf.nn.log_softmax(tf.cast(scores, "float32") + bias))
        return tf.raw_ops.BatchMatMulV3(x=tf.cast(probs, dtype), y=value,
                                        Tout=dtype)

    return tf.cond(small, small_kernels,
                   lambda: scaled_dot_product(query, key, value, bias))


def _split_heads(layer, x, batch, seq):
    """[batch, seq, H] -> [batch, N, seq, head]."""
    if x.shape[1] == 1:  # [CLS]-only queries: the same memory order
        return ops.reshape(x, (batch, layer.num_heads, 1, layer.head_size))
    return layer.split_heads(x, batch, seq)


def _merge_heads(layer, x, batch, seq):
    """[batch, N, seq, head] -> [batch, seq, H]."""
    if x.shape[2] == 1:
        return ops.reshape(x, (batch, seq, layer.hidden_size))
    return layer.merge_heads(x, batch, seq)


def self_attention(layer, hidden_states, attention_mask, query_states=None,
                   packing=None, residual=None):
    """`layer(hidden_states, attention_mask, training=False)` [+ residual]
    for a built `MultiHeadSelfAttention`, in float32 or bfloat16.

    Args:
      layer: the `MultiHeadSelfAttention` whose weights are read.
      hidden_states: [batch, seq, H], or with `packing` its packed rows
        [tokens, H]; keys and values come from these.
      attention_mask: int [batch, seq]; 1 for real tokens, 0 for padding.
      query_states: optional [batch, q, H], the states to compute outputs
        for; default `hidden_states`.
      packing: optional `TokenPacking` of `attention_mask`: the
        projections run on its rows, and so does the output unless
        `query_states` is given.
      residual: optional tensor of the output's shape added to the output,
        fused into the output projection where TensorFlow can
        (`add_residual`).

    Returns:
      [batch, q, H] (q = seq by default; [tokens, H] with `packing` and no
      `query_states`) in the layer's compute dtype, in `residual`'s dtype
      with one. Scores and softmax are float32.
    """
    if packing is None:
        batch, seq = ops.shape(hidden_states)[:2]

        def split_heads(x):
            return _split_heads(layer, x, batch, seq)
    else:
        batch, seq = packing.batch, packing.seq

        def split_heads(x):
            return packing.spread_heads(x, layer.num_heads)
    own_queries = query_states is None
    if own_queries:
        query_states = hidden_states
    query = fused_dense(layer.query, query_states) * (
        1.0 / math.sqrt(layer.head_size))
    if own_queries:
        query, queries = split_heads(query), seq
    else:
        queries = ops.shape(query_states)[1]
        query = _split_heads(layer, query, batch, queries)
    key = split_heads(fused_dense(layer.key, hidden_states))
    value = split_heads(fused_dense(layer.value, hidden_states))
    bias = padding_bias(attention_mask)[:, None, None, :]
    if layer.compute_dtype in ("float32", "bfloat16"):
        # Every block of a packed call has the same problem sizes (the
        # first-token block its own): their test is computed once.
        small = (_small_problem(query, key) if packing is None
                 else packing.per_call(("small attention", own_queries),
                                       lambda: _small_problem(query, key)))
        context = _context(query, key, value, bias, small)
    else:  # float16: the layer's own form, as its Keras forward
        context = scaled_dot_product(query, key, value, bias)
    if own_queries and packing is not None:
        context = packing.pack_heads(context)
    else:
        context = _merge_heads(layer, context, batch, queries)
    return fused_dense(layer.output_dense, context, residual=residual)
