"""The post-LayerNorm transformer block of BERT."""

import contextlib
import contextvars

import keras
from keras import ops

from tfbert.layers.activations import get_activation
from tfbert.layers.attention import MultiHeadSelfAttention
from tfbert.layers.fused_dense import (add_residual, bias_add, fused_dense,
                                      fused_matmul)
from tfbert.layers.layer_norm import LayerNorm

# block -> its feed-forward shards, inside `sharded_feed_forward`.
_FEED_FORWARD_SHARDS = contextvars.ContextVar("tfbert_feed_forward_shards",
                                              default={})


@contextlib.contextmanager
def sharded_feed_forward(shards):
    """Within this context, the inference path of each `TransformerBlock`
    in `shards` computes its feed-forward layer from column shards of its
    kernels (`TransformerBlock.feed_forward_shards`): for each shard
    `act(x @ inner_kernel + inner_bias) @ outer_kernel`, summed, plus the
    output bias. The same values up to float rounding, as independent
    matmuls: TensorFlow runs a matmul whose operands fit in the L2 cache on
    one thread, so on a small batch the shards' matmuls run side by side on
    the executor's threads while one whole [H, I] matmul gains little from
    a second thread.

    Args:
      shards: dict block -> list of (inner_kernel [H, I_j], inner_bias
        [I_j], outer_kernel [I_j, H]) tensors or variables, the I_j summing
        to the block's intermediate size.
    """
    token = _FEED_FORWARD_SHARDS.set(shards)
    try:
        yield
    finally:
        _FEED_FORWARD_SHARDS.reset(token)


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
      first_token_only: compute the output of position 0 only (its
        attention still reads every position), e.g. for the last block under
        a sequence classifier, which reads nothing else.
      packing: optional `TokenPacking` of `attention_mask` (inference
        only): `hidden_states` are its packed rows [tokens, H] and so is
        the output (see `TokenPacking`).

    Returns:
      [batch, seq, H] float32 ([batch, 1, H] with `first_token_only`,
      [tokens, H] with `packing` without it); LayerNorm runs in float32
      under every policy.
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
        self.inference_activation = get_activation(hidden_act,
                                                   for_inference=True)

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

    def call(self, hidden_states, attention_mask, training=None,
             first_token_only=False, packing=None):
        queries = None
        if first_token_only:
            queries = (hidden_states[:, :1] if packing is None
                       else packing.first_tokens(hidden_states))
        # Residual sums are float32: under mixed precision the sub-layer
        # outputs are float16/bfloat16 while LayerNorm returns float32.
        residual = ops.cast(hidden_states if queries is None else queries,
                            "float32")
        if not training:
            # Each residual add goes into the projection before it, which
            # TensorFlow fuses (`add_residual`); dropout is the identity.
            hidden_states = self.attention_layer_norm(self.attention(
                hidden_states, attention_mask, query_states=queries,
                packing=packing, residual=residual))
            return self.output_layer_norm(
                self._inference_feed_forward(hidden_states))
        attended = self.attention(hidden_states, attention_mask,
                                  training=training, query_states=queries,
                                  packing=packing)
        attended = self.attention_output_dropout_layer(attended,
                                                       training=training)
        hidden_states = self.attention_layer_norm(
            residual + ops.cast(attended, "float32"))
        outer = self.output_dense(self.intermediate_dense(hidden_states))
        outer = self.output_dropout_layer(outer, training=training)
        return self.output_layer_norm(
            hidden_states + ops.cast(outer, "float32"))

    def _inference_feed_forward(self, hidden_states):
        """`hidden_states` + the feed-forward layer's output, float32, in the
        form TensorFlow fuses (see `fused_dense`, `add_residual`), from
        column shards inside `sharded_feed_forward`."""
        shards = _FEED_FORWARD_SHARDS.get().get(self)
        if shards is None:
            inner = fused_dense(self.intermediate_dense, hidden_states,
                                self.inference_activation)
            return fused_dense(self.output_dense, inner,
                               residual=hidden_states)
        dtype = self.output_dense.compute_dtype
        shape = ops.shape(hidden_states)
        rows = ops.reshape(ops.cast(hidden_states, dtype), (-1, shape[-1]))
        # The output bias goes with the first shard (fused into its matmul);
        # Grappler merges the shards' outputs and the residual into one AddN.
        outer = ops.reshape(hidden_states, (-1, shape[-1]))
        for i, (inner_kernel, inner_bias, outer_kernel) in enumerate(shards):
            inner = fused_matmul(rows, inner_kernel, inner_bias,
                                 self.inference_activation)
            part = ops.matmul(inner, ops.cast(outer_kernel, dtype))
            if i == 0:
                part = bias_add(part, ops.cast(self.output_dense.bias, dtype))
            outer = add_residual(part, outer)
        return ops.reshape(outer, shape)

    def feed_forward_shards(self, num_shards):
        """The feed-forward kernels cut into `num_shards` column shards for
        `sharded_feed_forward`: a list of (inner_kernel [H, I_j],
        inner_bias [I_j], outer_kernel [I_j, H]) numpy arrays in the
        weights' dtype, the I_j as equal as the intermediate size allows.

        Raises:
          ValueError: `num_shards` below 1 or above the intermediate size.
        """
        size = self.intermediate_size
        if not 1 <= num_shards <= size:
            raise ValueError(f"feed_forward_shards={num_shards}: must be in "
                             f"[1, the intermediate size {size}]")
        inner_kernel, inner_bias, outer_kernel = (
            keras.ops.convert_to_numpy(weight) for weight in (
                self.intermediate_dense.kernel, self.intermediate_dense.bias,
                self.output_dense.kernel))
        bounds = [size * i // num_shards for i in range(num_shards + 1)]
        return [(inner_kernel[:, start:end], inner_bias[start:end],
                 outer_kernel[start:end])
                for start, end in zip(bounds[:-1], bounds[1:])]

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
