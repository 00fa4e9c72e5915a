"""`TransformerBlock`'s computation for TensorFlow inference, from the
block's own weights: residual adds fused into the projections, packed
tokens, the first position only, and the feed-forward layer from column
shards."""

import keras
from keras import ops

from tfbert.inference.activations import inference_activation
from tfbert.inference.attention import self_attention
from tfbert.inference.fused_dense import (add_residual, bias_add, fused_dense,
                                          fused_matmul)


def feed_forward_shards(block, num_shards):
    """A built `TransformerBlock`'s feed-forward kernels cut into
    `num_shards` column shards: a list of (inner_kernel [H, I_j],
    inner_bias [I_j], outer_kernel [I_j, H]) numpy arrays in the weights'
    dtype, the I_j as equal as the intermediate size allows.

    `transformer_block(..., shards=...)` computes the feed-forward layer
    from them: for each shard `act(x @ inner_kernel + inner_bias) @
    outer_kernel`, summed, plus the output bias. The same values up to
    float rounding, as independent matmuls: TensorFlow runs a matmul whose
    operands fit in the L2 cache on one thread, so on a small batch the
    shards' matmuls run side by side on the executor's threads while one
    whole [H, I] matmul gains little from a second thread.

    Raises:
      ValueError: `num_shards` below 1 or above the intermediate size.
    """
    size = block.intermediate_size
    if not 1 <= num_shards <= size:
        raise ValueError(f"feed_forward_shards={num_shards}: must be in "
                         f"[1, the intermediate size {size}]")
    inner_kernel, inner_bias, outer_kernel = (
        keras.ops.convert_to_numpy(weight) for weight in (
            block.intermediate_dense.kernel, block.intermediate_dense.bias,
            block.output_dense.kernel))
    bounds = [size * i // num_shards for i in range(num_shards + 1)]
    return [(inner_kernel[:, start:end], inner_bias[start:end],
             outer_kernel[start:end])
            for start, end in zip(bounds[:-1], bounds[1:])]


def _feed_forward(block, hidden_states, shards):
    """`hidden_states` + the feed-forward layer's output, float32, in the
    form TensorFlow fuses (see `fused_dense`, `add_residual`), from
    `shards` (see `feed_forward_shards`) when given."""
    activation = inference_activation(block.hidden_act)
    if shards is None:
        inner = fused_dense(block.intermediate_dense, hidden_states,
                            activation)
        return fused_dense(block.output_dense, inner, residual=hidden_states)
    dtype = block.output_dense.compute_dtype
    shape = ops.shape(hidden_states)
    rows = ops.reshape(ops.cast(hidden_states, dtype), (-1, shape[-1]))
    # The output bias goes with the first shard (fused into its matmul);
    # Grappler merges the shards' outputs and the residual into one AddN.
    outer = ops.reshape(hidden_states, (-1, shape[-1]))
    for i, (inner_kernel, inner_bias, outer_kernel) in enumerate(shards):
        inner = fused_matmul(rows, inner_kernel, inner_bias, activation)
        part = ops.matmul(inner, ops.cast(outer_kernel, dtype))
        if i == 0:
            part = bias_add(part, ops.cast(block.output_dense.bias, dtype))
        outer = add_residual(part, outer)
    return ops.reshape(outer, shape)


def transformer_block(block, hidden_states, attention_mask,
                      first_token_only=False, packing=None, shards=None):
    """`block(hidden_states, attention_mask, training=False)` for a built
    `TransformerBlock`: its values up to float rounding, each residual add
    inside the projection before it (which TensorFlow fuses,
    `add_residual`).

    Args:
      block: the `TransformerBlock` whose weights are read.
      hidden_states: [batch, seq, H], or with `packing` its packed rows
        [tokens, H].
      attention_mask: int [batch, seq]; 1 for real tokens, 0 for padding.
      first_token_only: compute the output of position 0 only (its
        attention still reads every position), e.g. for the last block under
        a sequence classifier, which reads nothing else.
      packing: optional `TokenPacking` of `attention_mask`.
      shards: optional feed-forward column shards (`feed_forward_shards`:
        numpy arrays, tensors or variables) to compute the feed-forward
        layer from instead of its kernels.

    Returns:
      [batch, seq, H] float32 ([batch, 1, H] with `first_token_only`,
      [tokens, H] with `packing` without it).
    """
    queries = None
    if first_token_only:
        queries = (hidden_states[:, :1] if packing is None
                   else packing.first_tokens(hidden_states))
    # Residual sums are float32: under bfloat16 the sub-layer outputs are
    # bfloat16 while LayerNorm returns float32.
    residual = ops.cast(hidden_states if queries is None else queries,
                        "float32")
    hidden_states = block.attention_layer_norm(self_attention(
        block.attention, hidden_states, attention_mask, query_states=queries,
        packing=packing, residual=residual))
    return block.output_layer_norm(
        _feed_forward(block, hidden_states, shards))
