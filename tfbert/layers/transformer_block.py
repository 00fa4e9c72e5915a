"""The post-LayerNorm transformer block of BERT."""

import keras
from keras import ops

from tfbert.layers.activations import get_activation
from tfbert.layers.attention import MultiHeadSelfAttention
from tfbert.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="tfbert")
class TransformerBlock(keras.layers.Layer):
    """Self-attention then feed-forward, each followed by dropout, a residual
    add and LayerNorm (post-LN):

        x1 = LN(x + dropout(attention(x)))
        x2 = LN(x1 + dropout(W2 · act(W1 · x1)))

    Args:
      num_heads: attention heads.
      intermediate_size: width of the feed-forward inner layer.
      hidden_act: activation name (see `get_activation`).
      hidden_dropout: dropout rate on both sub-layer outputs.
      attention_dropout: dropout rate on attention probabilities.
      initializer_range: stddev of the truncated-normal initializer.
      layer_norm_epsilon: LayerNorm epsilon.

    Call args:
      hidden_states: [batch, seq, H].
      attention_mask: int [batch, seq]; 1 for real tokens, 0 for padding.

    Returns:
      [batch, seq, H] float32; LayerNorm runs in float32 under every policy.

    `tfbert.inference.transformer_block` computes the same from this
    block's weights in the forms TensorFlow runs fastest at inference.
    """

    def __init__(self, num_heads, intermediate_size, hidden_act="gelu",
                 hidden_dropout=0.1, attention_dropout=0.1,
                 initializer_range=0.02, layer_norm_epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout = hidden_dropout
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.activation = get_activation(hidden_act)

    def build(self, input_shape):
        hidden_size = input_shape[-1]
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        policy = self.dtype_policy
        self.attention = MultiHeadSelfAttention(
            self.num_heads, dropout=self.attention_dropout,
            initializer_range=self.initializer_range, dtype=policy,
            name="attention")
        self.attention.build(input_shape)
        self.attention_output_dropout_layer = keras.layers.Dropout(
            self.hidden_dropout, name="attention_output_dropout")
        self.attention_layer_norm = LayerNorm(
            epsilon=self.layer_norm_epsilon, dtype="float32",
            name="attention_layer_norm")
        self.attention_layer_norm.build(input_shape)
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_size, activation=self.activation,
            kernel_initializer=init, dtype=policy, name="intermediate")
        self.intermediate_dense.build(input_shape)
        self.output_dense = keras.layers.Dense(
            hidden_size, kernel_initializer=init, dtype=policy, name="output")
        self.output_dense.build(tuple(input_shape[:-1]) +
                                (self.intermediate_size,))
        self.output_dropout_layer = keras.layers.Dropout(
            self.hidden_dropout, name="output_dropout")
        self.output_layer_norm = LayerNorm(
            epsilon=self.layer_norm_epsilon, dtype="float32",
            name="output_layer_norm")
        self.output_layer_norm.build(input_shape)
        self.built = True

    def call(self, hidden_states, attention_mask, training=None):
        attended = self.attention(hidden_states, attention_mask,
                                  training=training)
        attended = self.attention_output_dropout_layer(attended,
                                                       training=training)
        # Residual sums are float32: under mixed precision the sub-layer
        # outputs are float16/bfloat16 while LayerNorm returns float32.
        hidden_states = self.attention_layer_norm(
            ops.cast(hidden_states, "float32") + ops.cast(attended, "float32"))
        outer = self.output_dense(self.intermediate_dense(hidden_states))
        outer = self.output_dropout_layer(outer, training=training)
        return self.output_layer_norm(
            hidden_states + ops.cast(outer, "float32"))

    def compute_output_shape(self, input_shape, *args):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads, intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act, hidden_dropout=self.hidden_dropout,
            attention_dropout=self.attention_dropout,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon)
        return config
