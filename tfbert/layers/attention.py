"""Multi-head self-attention with a key-padding mask."""

import math

import keras
from keras import ops

from tfbert.layers.fused_dense import add_residual, fused_dense
from tfbert.layers.masking import padding_bias

# At inference on TensorFlow, attention problems with at most this many
# scores per head (batch x queries x keys) run on TensorFlow's own kernels
# instead of oneDNN's (see `_tensorflow_inference_context`).
SMALL_ATTENTION_SCORES = 1024


def _keras_dense(dense, inputs, residual=None):
    """`dense(inputs) [+ residual]` through the Keras layer (training: its
    own gradients), with `fused_dense`'s signature."""
    outputs = dense(inputs)
    return outputs if residual is None else add_residual(outputs, residual)


def _scaled_dot_product(query, key, value, bias, dropout=None):
    """`softmax(query @ key^T + bias) @ value` in Keras ops.

    Args:
      query: [batch, N, q, head]; key, value: [batch, N, k, head], in the
        compute dtype.
      bias: float32 [batch, 1, 1, k], added to the float32 scores.
      dropout: optional function applied to the probabilities (cast to the
        compute dtype).

    Returns:
      [batch, N, q, head] in the dtype of `value`.
    """
    scores = ops.cast(ops.matmul(query, ops.transpose(key, (0, 1, 3, 2))),
                      "float32")  # [batch, N, q, k]
    probs = ops.cast(ops.softmax(scores + bias, axis=-1), value.dtype)
    if dropout is not None:
        probs = dropout(probs)
    return ops.matmul(probs, value)


def _tensorflow_inference_context(query, key, value, bias):
    """`_scaled_dot_product` for TensorFlow inference, with kernels chosen
    by size at run time.

    With oneDNN (TensorFlow's default on CPUs with AVX512_VNNI, AVX512_BF16
    or AMX) batch matmuls and softmax run as oneDNN kernels, each with a
    fixed cost per call: on one sentence that cost is most of the attention
    core's time, and TensorFlow's own kernels (`BatchMatMulV3` and
    `LogSoftmax`, which oneDNN does not take over) do the same work faster.
    On larger problems oneDNN's are faster, so a `tf.cond` picks per call:
    up to `SMALL_ATTENTION_SCORES` the small kernels.

    Args and returns: as `_scaled_dot_product` (no dropout), the inputs in
    float32 or bfloat16.
    """
    import tensorflow as tf

    dtype = value.dtype

    def small():
        scores = tf.raw_ops.BatchMatMulV3(x=query, y=key, Tout=dtype,
                                          adj_y=True)
        probs = tf.exp(tf.nn.log_softmax(tf.cast(scores, "float32") + bias))
        return tf.raw_ops.BatchMatMulV3(x=tf.cast(probs, dtype), y=value,
                                        Tout=dtype)

    query_shape, key_shape = tf.shape(query), tf.shape(key)
    scores = query_shape[0] * query_shape[2] * key_shape[2]
    return tf.cond(scores <= SMALL_ATTENTION_SCORES, small,
                   lambda: _scaled_dot_product(query, key, value, bias))


@keras.saving.register_keras_serializable(package="tfbert")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over `num_heads` heads.

    Query, key and value projections are separate [H, H] kernels whose columns
    are the heads, head after head (the layout of Google's and HF's BERT).

    Args:
      num_heads: number of heads N; H must be divisible by N.
      dropout: dropout rate on the attention probabilities.
      initializer_range: stddev of the truncated-normal initializer.

    Call args:
      hidden_states: [batch, seq, H].
      attention_mask: int [batch, seq]; 1 for real tokens, 0 for padding.
        Padding keys get zero attention; queries are not masked.
      query_states: optional [batch, q, H], the states to compute outputs
        for (keys and values always come from `hidden_states`); default
        `hidden_states`.
      packing: optional `TokenPacking` of `attention_mask` (inference
        only): `hidden_states` are then its packed rows [tokens, H], the
        projections run on those, and so does the output unless
        `query_states` is given.
      residual: optional tensor of the output's shape added to the output
        (at inference fused into the output projection where TensorFlow
        can: `add_residual`).

    Returns:
      [batch, q, H] in the compute dtype (q = seq by default; [tokens, H]
      with `packing` and no `query_states`), in `residual`'s dtype with
      one. Scores and softmax are float32.
    """

    def __init__(self, num_heads, dropout=0.1, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.dropout_layer = keras.layers.Dropout(dropout, name="dropout")

    def build(self, input_shape):
        hidden_size = input_shape[-1]
        if hidden_size % self.num_heads:
            raise ValueError(f"hidden size {hidden_size} is not divisible by "
                             f"num_heads={self.num_heads}")
        self.hidden_size = hidden_size
        self.head_size = hidden_size // self.num_heads
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)

        def dense(name):
            layer = keras.layers.Dense(hidden_size, kernel_initializer=init,
                                       dtype=self.dtype_policy, name=name)
            layer.build(input_shape)
            return layer

        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output")
        self.built = True

    def _split_heads(self, x, batch, seq):
        x = ops.reshape(x, (batch, seq, self.num_heads, self.head_size))
        if x.shape[1] == 1:  # [CLS]-only queries: the same memory order
            return ops.reshape(x, (batch, self.num_heads, 1, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))  # [batch, N, seq, head]

    def _merge_heads(self, x, batch, seq):
        if x.shape[2] != 1:
            x = ops.transpose(x, (0, 2, 1, 3))  # [batch, seq, N, head]
        return ops.reshape(x, (batch, seq, self.hidden_size))

    def call(self, hidden_states, attention_mask, training=None,
             query_states=None, packing=None, residual=None):
        if packing is None:
            batch, seq = ops.shape(hidden_states)[:2]

            def split_heads(x):
                return self._split_heads(x, batch, seq)
        else:
            batch, seq = packing.batch, packing.seq

            def split_heads(x):
                return packing.spread_heads(x, self.num_heads)
        own_queries = query_states is None
        if own_queries:
            query_states = hidden_states
        scale = 1.0 / math.sqrt(self.head_size)
        # Inference: the same values in the form TensorFlow fuses.
        dense = _keras_dense if training else fused_dense
        query = dense(self.query, query_states) * scale
        if own_queries:
            query, queries = split_heads(query), seq
        else:
            queries = ops.shape(query_states)[1]
            query = self._split_heads(query, batch, queries)
        key = split_heads(dense(self.key, hidden_states))
        value = split_heads(dense(self.value, hidden_states))
        bias = padding_bias(attention_mask)[:, None, None, :]
        if (not training and keras.backend.backend() == "tensorflow"
                and self.compute_dtype in ("float32", "bfloat16")):
            context = _tensorflow_inference_context(query, key, value, bias)
        else:
            context = _scaled_dot_product(
                query, key, value, bias,
                lambda probs: self.dropout_layer(probs, training=training))
        if own_queries and packing is not None:
            context = packing.pack_heads(context)
        else:
            context = self._merge_heads(context, batch, queries)
        return dense(self.output_dense, context, residual=residual)

    def compute_output_shape(self, input_shape, *args):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(num_heads=self.num_heads, dropout=self.dropout,
                      initializer_range=self.initializer_range)
        return config
