"""Each layer against a direct numpy transcription of BERT's equations."""

import math

import numpy as np
import pytest

from tfbert.layers import (
    BertEmbeddings, ClassificationHead, MaskedLMHead, MultiHeadSelfAttention,
    NextSentenceHead, Pooler, SpanLabelingHead, TokenClassificationHead,
    TokenPacking, TransformerBlock, get_activation, padded_to,
    trailing_padding_removed)
from tfbert.layers.transformer_block import sharded_feed_forward

RNG = np.random.default_rng(0)


def _randomize(layer):
    for variable in layer.weights:
        variable.assign(RNG.normal(0, 0.3, variable.shape).astype("float32"))
    return layer


def _layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _gelu_erf(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _attention_reference(x, mask, layer):
    heads, size = layer.num_heads, x.shape[-1] // layer.num_heads

    def project(dense):
        y = x @ dense.kernel.numpy() + dense.bias.numpy()
        return y.reshape(*x.shape[:2], heads, size).transpose(0, 2, 1, 3)

    q, k, v = project(layer.query), project(layer.key), project(layer.value)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size)
    scores = np.where(mask[:, None, None, :] == 1, scores, -np.inf)
    context = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(x.shape)
    dense = layer.output_dense
    return context @ dense.kernel.numpy() + dense.bias.numpy()


def test_activations():
    x = np.linspace(-5, 5, 101).astype(np.float32)
    np.testing.assert_allclose(get_activation("gelu")(x), _gelu_erf(x),
                               atol=1e-6)
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi)
                                  * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(get_activation("gelu_approximate")(x), tanh,
                               atol=1e-6)
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        get_activation("swish")


def test_embeddings():
    layer = BertEmbeddings(vocab_size=11, hidden_size=8,
                           max_position_embeddings=6, type_vocab_size=2)
    layer.build()
    _randomize(layer)
    ids = np.array([[1, 5, 10, 0]], np.int32)
    types = np.array([[0, 0, 1, 1]], np.int32)
    expected = _layer_norm(
        layer.word_embeddings.numpy()[ids]
        + layer.token_type_embeddings.numpy()[types]
        + layer.position_embeddings.numpy()[None, :4],
        layer.layer_norm.gamma.numpy(), layer.layer_norm.beta.numpy())
    np.testing.assert_allclose(layer(ids, types), expected, atol=1e-5)


def test_attention_with_key_padding_mask():
    layer = MultiHeadSelfAttention(num_heads=2, dropout=0.0)
    layer.build((None, None, 8))
    _randomize(layer)
    x = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    np.testing.assert_allclose(layer(x, mask), _attention_reference(x, mask, layer),
                               atol=1e-5)


@pytest.mark.parametrize("training", [False, True])
def test_attention_adds_the_residual_to_its_output(training):
    layer = MultiHeadSelfAttention(num_heads=2, dropout=0.0)
    layer.build((None, None, 8))
    _randomize(layer)
    x = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    residual = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    np.testing.assert_allclose(
        layer(x, mask, training=training, residual=residual),
        _attention_reference(x, mask, layer) + residual, atol=1e-5)


def _inference_ops_run(layer, x, mask):
    """The ops TensorFlow's executor ran (after its rewrites, oneDNN's
    included) for `layer(x, mask, training=False)` in a graph, as (op type,
    number of inputs) pairs, and the output: the variables frozen into
    constants, run in a TF1 Session (as TF Serving runs a SavedModel) with
    a full trace."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2)

    forward = tf.function(lambda x, mask: layer(x, mask, training=False))
    frozen = convert_variables_to_constants_v2(forward.get_concrete_function(
        tf.TensorSpec([None, None, x.shape[-1]], tf.float32),
        tf.TensorSpec([None, None], tf.int32)))
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(frozen.graph.as_graph_def(), name="")
    inputs = [tensor.name for tensor in frozen.inputs]
    with tf.compat.v1.Session(graph=graph) as session:
        metadata = tf.compat.v1.RunMetadata()
        output = session.run(
            frozen.outputs[0].name, dict(zip(inputs, (x, mask))),
            options=tf.compat.v1.RunOptions(
                trace_level=tf.compat.v1.RunOptions.FULL_TRACE),
            run_metadata=metadata)
    ran = []
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            if " = " in node.timeline_label:  # "name = Op(input, ...)"
                call = node.timeline_label.split(" = ")[1]
                arguments = call[call.index("(") + 1:call.rindex(")")]
                ran.append((call.split("(")[0],
                            len(arguments.split(", ")) if arguments else 0))
    return ran, output


@pytest.mark.parametrize("batch,seq", [(1, 7), (2, 22), (3, 19), (4, 40)])
def test_attention_inference_kernels_follow_the_problem_size(batch, seq):
    """At inference TensorFlow runs attention's batch matmuls as
    `BatchMatMulV3` (its own kernels, which oneDNN does not take over) up to
    `SMALL_ATTENTION_SCORES` scores per head, and as the default
    `BatchMatMulV2` (oneDNN's where it is on) above; both give the
    reference values, padding masked."""
    from tfbert.layers import attention

    layer = MultiHeadSelfAttention(num_heads=2, dropout=0.0)
    layer.build((None, None, 8))
    _randomize(layer)
    x = RNG.normal(size=(batch, seq, 8)).astype(np.float32)
    mask = np.ones((batch, seq), np.int32)
    mask[0, seq // 2:] = 0
    ran, output = _inference_ops_run(layer, x, mask)
    np.testing.assert_allclose(output, _attention_reference(x, mask, layer),
                               atol=1e-5)
    matmuls = {op for op, _ in ran if "BatchMatMul" in op}
    softmaxes = {op for op, _ in ran if "Softmax" in op}
    if batch * seq * seq <= attention.SMALL_ATTENTION_SCORES:
        assert (matmuls, softmaxes) == ({"BatchMatMulV3"}, {"LogSoftmax"})
    else:
        # BatchMatMulV2 or oneDNN's forms of it (fused with the mask add
        # where TensorFlow's rewrite does that).
        assert matmuls and "BatchMatMulV3" not in matmuls
        assert softmaxes and "LogSoftmax" not in softmaxes


def _block_reference(x, mask, block):
    ln1, ln2 = block.attention_layer_norm, block.output_layer_norm
    x1 = _layer_norm(x + _attention_reference(x, mask, block.attention),
                     ln1.gamma.numpy(), ln1.beta.numpy())
    inner = _gelu_erf(x1 @ block.intermediate_dense.kernel.numpy()
                      + block.intermediate_dense.bias.numpy())
    outer = inner @ block.output_dense.kernel.numpy() + block.output_dense.bias.numpy()
    return _layer_norm(x1 + outer, ln2.gamma.numpy(), ln2.beta.numpy())


def _tiny_block():
    block = TransformerBlock(num_heads=2, intermediate_size=16,
                             hidden_dropout=0.0, attention_dropout=0.0)
    block.build((None, None, 8))
    return _randomize(block)


def test_transformer_block_is_post_layer_norm():
    block = _tiny_block()
    x = RNG.normal(size=(2, 4, 8)).astype(np.float32)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], np.int32)
    np.testing.assert_allclose(block(x, mask), _block_reference(x, mask, block),
                               atol=1e-4)


def test_transformer_block_residual_adds_run_inside_their_matmuls():
    """With oneDNN, the block's inference graph adds each residual inside
    the projection before it (the attention output and the second
    feed-forward matmul: one fused kernel each, with 4 inputs: rows,
    kernel, bias, residual), and computes the block's values."""
    from tensorflow.python.util import _pywrap_util_port

    if not _pywrap_util_port.IsMklEnabled():
        pytest.skip("this TensorFlow build has no oneDNN")
    block = _tiny_block()
    x = RNG.normal(size=(2, 4, 8)).astype(np.float32)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], np.int32)
    ran, output = _inference_ops_run(block, x, mask)
    np.testing.assert_allclose(output, _block_reference(x, mask, block),
                               atol=1e-4)
    matmuls = [inputs for op, inputs in ran if "FusedMatMul" in op]
    if not any(op.startswith("_Mkl") for op, _ in ran):
        pytest.skip("oneDNN is off in this process")
    # Q, K, V, attention output, the two feed-forward matmuls.
    assert sorted(matmuls) == [3, 3, 3, 3, 4, 4], ran


# Prefix padding, a hole, no padding, and a row without any real token.
PACKING_MASK = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 0], [1, 1, 1, 1, 1],
                         [0, 0, 0, 0, 0]], np.int32)


def test_token_packing_keeps_real_tokens_and_each_first_position():
    keep = PACKING_MASK.astype(bool)
    keep[:, 0] = True
    x = RNG.normal(size=(4, 5, 3)).astype(np.float32)
    packing = TokenPacking(PACKING_MASK)
    packed = np.asarray(packing.pack(x))
    np.testing.assert_array_equal(packed, x[keep])
    np.testing.assert_array_equal(np.asarray(packing.unpack(packed)),
                                  np.where(keep[..., None], x, 0.0))
    np.testing.assert_array_equal(np.asarray(packing.first_tokens(packed)),
                                  x[:, :1])


def test_token_packing_spreads_heads_out_and_packs_them_back():
    keep = PACKING_MASK.astype(bool)
    keep[:, 0] = True
    heads, head = 2, 3
    x = RNG.normal(size=(4, 5, heads * head)).astype(np.float32)
    packing = TokenPacking(PACKING_MASK)
    packed = x[keep]
    # Each dropped position holds the last kept position before it.
    last_kept = np.maximum.accumulate(
        np.where(keep, np.arange(keep.shape[1]), 0), axis=1)
    spread = np.take_along_axis(x, last_kept[..., None], axis=1)
    by_head = spread.reshape(4, 5, heads, head).transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(
        np.asarray(packing.spread_heads(packed, heads)), by_head)
    context = RNG.normal(size=(4, heads, 5, head)).astype(np.float32)
    np.testing.assert_array_equal(
        np.asarray(packing.pack_heads(context)),
        context.transpose(0, 2, 1, 3).reshape(4, 5, -1)[keep])


@pytest.mark.parametrize("mask, length", [
    (PACKING_MASK, 5),
    (np.pad(PACKING_MASK, [[0, 0], [0, 3]]), 5),
    (np.array([[1, 0, 0, 0], [1, 0, 1, 0]], np.int32), 3),
    (np.zeros((2, 4), np.int32), 1)])  # hostile: the first column stays
def test_trailing_padding_removed_keeps_every_real_column(mask, length):
    ids = RNG.integers(1, 100, mask.shape).astype(np.int32)
    cut = trailing_padding_removed({"input_word_ids": ids, "input_mask": mask})
    np.testing.assert_array_equal(np.asarray(cut["input_mask"]),
                                  mask[:, :length])
    np.testing.assert_array_equal(np.asarray(cut["input_word_ids"]),
                                  ids[:, :length])
    x = RNG.normal(size=(mask.shape[0], length, 3)).astype(np.float32)
    back = np.asarray(padded_to(x, mask.shape[1]))
    assert back.shape == (mask.shape[0], mask.shape[1], 3)
    np.testing.assert_array_equal(back[:, :length], x)
    assert not back[:, length:].any()


def test_transformer_block_on_packed_tokens_equals_the_padded_block():
    """The packed form computes the same rows: every real token's, and the
    first position's (also `first_token_only`)."""
    block = _tiny_block()
    x = RNG.normal(size=(3, 5, 8)).astype(np.float32)
    mask = PACKING_MASK[:3]
    expected = _block_reference(x, mask, block)
    packing = TokenPacking(mask)
    packed = block(packing.pack(x), mask, packing=packing)
    np.testing.assert_allclose(np.asarray(packed), expected[mask == 1],
                               atol=1e-4)
    first = block(packing.pack(x), mask, packing=packing,
                  first_token_only=True)
    np.testing.assert_allclose(np.asarray(first), expected[:, :1], atol=1e-4)


def test_feed_forward_shards_cover_the_kernels_column_by_column():
    block = _tiny_block()
    shards = block.feed_forward_shards(3)
    assert [inner.shape[1] for inner, _, _ in shards] == [5, 5, 6]
    np.testing.assert_array_equal(
        np.concatenate([inner for inner, _, _ in shards], axis=1),
        block.intermediate_dense.kernel.numpy())
    np.testing.assert_array_equal(
        np.concatenate([bias for _, bias, _ in shards]),
        block.intermediate_dense.bias.numpy())
    np.testing.assert_array_equal(
        np.concatenate([outer for _, _, outer in shards]),
        block.output_dense.kernel.numpy())


def test_sharded_feed_forward_computes_inference_from_the_shards():
    """Inside `sharded_feed_forward` the inference path (padded and packed)
    reads the block's feed-forward layer from the shards given; training
    reads the variables."""
    block = _tiny_block()
    x = RNG.normal(size=(3, 5, 8)).astype(np.float32)
    mask = PACKING_MASK[:3]
    packing = TokenPacking(mask)
    shards = block.feed_forward_shards(3)
    with sharded_feed_forward({block: shards}):
        padded = block(x, mask, training=False)
        packed = block(packing.pack(x), mask, packing=packing)
    expected = _block_reference(x, mask, block)
    np.testing.assert_allclose(padded, expected, atol=1e-4)
    np.testing.assert_allclose(packed, expected[mask == 1], atol=1e-4)

    shifted = [(inner, bias + 1.0, outer) for inner, bias, outer in shards]
    with sharded_feed_forward({block: shifted}):
        inference = block(x, mask, training=False)
        training = block(x, mask, training=True)  # no dropout in _tiny_block
    np.testing.assert_allclose(training, expected, atol=1e-4)
    block.intermediate_dense.bias.assign(
        block.intermediate_dense.bias.numpy() + 1.0)
    np.testing.assert_allclose(inference, _block_reference(x, mask, block),
                               atol=1e-4)


def test_pooler_uses_the_first_position():
    x = RNG.normal(size=(2, 3, 8)).astype(np.float32)
    for activation, reference in (("tanh", np.tanh),
                                  ("relu", lambda y: np.maximum(y, 0)),
                                  ("gelu", _gelu_erf)):
        layer = Pooler(activation=activation)
        layer.build((None, None, 8))
        _randomize(layer)
        expected = reference(x[:, 0] @ layer.dense.kernel.numpy()
                             + layer.dense.bias.numpy())
        np.testing.assert_allclose(layer(x), expected, atol=1e-6)
        assert Pooler.from_config(layer.get_config()).activation == activation


def test_masked_lm_head_gathers_then_decodes_with_the_table():
    layer = MaskedLMHead(vocab_size=13)
    layer.build((None, None, 8))
    _randomize(layer)
    x = RNG.normal(size=(2, 6, 8)).astype(np.float32)
    table = RNG.normal(size=(13, 8)).astype(np.float32)
    positions = np.array([[0, 5, 2], [1, 1, 4]], np.int32)
    gathered = np.take_along_axis(x, positions[..., None], axis=1)
    hidden = _gelu_erf(gathered @ layer.transform.kernel.numpy()
                       + layer.transform.bias.numpy())
    hidden = _layer_norm(hidden, layer.layer_norm.gamma.numpy(),
                         layer.layer_norm.beta.numpy())
    expected = hidden @ table.T + layer.output_bias.numpy()
    np.testing.assert_allclose(layer(x, positions, table), expected, atol=1e-4)
    # The head owns no [vocab, H] matrix: the decoder is the table passed in.
    assert all(tuple(w.shape) != (13, 8) for w in layer.weights)


def test_heads_shapes_dropout_and_masking():
    pooled = RNG.normal(size=(4, 8)).astype(np.float32)
    sequence = RNG.normal(size=(4, 5, 8)).astype(np.float32)
    regression = ClassificationHead(1, dropout=0.5)
    assert regression(pooled).shape == (4, 1)
    # Dropout only in training.
    np.testing.assert_array_equal(regression(pooled), regression(pooled))
    assert not np.allclose(regression(pooled, training=True), regression(pooled))
    assert TokenClassificationHead(7)(sequence).shape == (4, 5, 7)
    assert NextSentenceHead()(pooled).shape == (4, 2)
    mask = np.array([[1, 1, 1, 0, 0]] * 4, np.int32)
    start, end = SpanLabelingHead()(sequence, mask)
    assert start.shape == end.shape == (4, 5)
    assert np.asarray(end)[:, 3:].max() <= -1e8
    assert np.asarray(end)[:, :3].min() > -1e3
