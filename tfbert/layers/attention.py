"""Multi-head self-attention with a key-padding mask."""

import math

import keras
from keras import ops

from tfbert.layers.masking import padding_bias


def attention_scores(query, key, bias):
    """`query @ key^T + bias`: float32 [batch, N, q, k], whose softmax over
    the last axis is the attention distribution.

    Args:
      query: [batch, N, q, head] (scaled by 1/sqrt(head)); key:
        [batch, N, k, head], in the compute dtype.
      bias: float32 [batch, 1, 1, k], added to the float32 products.
    """
    return ops.cast(ops.matmul(query, ops.transpose(key, (0, 1, 3, 2))),
                    "float32") + bias


def scaled_dot_product(query, key, value, bias, dropout=None):
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
    probs = ops.cast(ops.softmax(attention_scores(query, key, bias), axis=-1),
                     value.dtype)
    if dropout is not None:
        probs = dropout(probs)
    return ops.matmul(probs, value)


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

    Returns:
      [batch, seq, H] in the compute dtype. Scores and softmax are float32.

    `tfbert.inference.attention` computes the same from this layer's
    weights in the forms TensorFlow runs fastest at inference.
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

    def split_heads(self, x, batch, seq):
        """[batch, seq, H] -> [batch, N, seq, head]."""
        x = ops.reshape(x, (batch, seq, self.num_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))

    def merge_heads(self, x, batch, seq):
        """[batch, N, seq, head] -> [batch, seq, H]."""
        x = ops.transpose(x, (0, 2, 1, 3))
        return ops.reshape(x, (batch, seq, self.hidden_size))

    def call(self, hidden_states, attention_mask, training=None):
        batch, seq = ops.shape(hidden_states)[:2]
        query, key, bias = self._query_key_bias(hidden_states, attention_mask)
        value = self.split_heads(self.value(hidden_states), batch, seq)
        context = scaled_dot_product(
            query, key, value, bias,
            lambda probs: self.dropout_layer(probs, training=training))
        return self.output_dense(self.merge_heads(context, batch, seq))

    def scores(self, hidden_states, attention_mask):
        """The scores `call` takes the softmax of (before dropout): float32
        [batch, N, seq, seq], `MASKED_LOGIT` added at padding keys (read by
        distillation's attention transfer)."""
        return attention_scores(
            *self._query_key_bias(hidden_states, attention_mask))

    def _query_key_bias(self, hidden_states, attention_mask):
        batch, seq = ops.shape(hidden_states)[:2]
        scale = 1.0 / math.sqrt(self.head_size)
        query = self.split_heads(self.query(hidden_states) * scale, batch, seq)
        key = self.split_heads(self.key(hidden_states), batch, seq)
        return query, key, padding_bias(attention_mask)[:, None, None, :]

    def compute_output_shape(self, input_shape, *args):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(num_heads=self.num_heads, dropout=self.dropout,
                      initializer_range=self.initializer_range)
        return config
