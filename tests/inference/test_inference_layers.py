"""`tfbert.inference`'s forms of the layers against the same numpy
transcriptions of BERT's equations as the plain layers (tests/layers), and
the TensorFlow kernels they run."""

import numpy as np
import pytest

from tests.layers.test_layers import (RNG, _attention_reference,
                                      _block_reference, _randomize,
                                      _tiny_block)
from tfbert.inference import (TokenPacking, feed_forward_shards, padded_to,
                              trailing_padding_removed, transformer_block)
from tfbert.inference import attention
from tfbert.inference.attention import self_attention
from tfbert.layers import MultiHeadSelfAttention


def test_attention_adds_the_residual_to_its_output():
    layer = MultiHeadSelfAttention(num_heads=2, dropout=0.0)
    layer.build((None, None, 8))
    _randomize(layer)
    x = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    residual = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    np.testing.assert_allclose(
        self_attention(layer, x, mask, residual=residual),
        _attention_reference(x, mask, layer) + residual, atol=1e-5)


def _frozen_graph(forward, x):
    """`forward(x, mask)` as a graph with the variables frozen into
    constants: (serialized GraphDef, input tensor names, output name)."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2)

    forward = tf.function(forward)
    frozen = convert_variables_to_constants_v2(forward.get_concrete_function(
        tf.TensorSpec([None, None, x.shape[-1]], tf.float32),
        tf.TensorSpec([None, None], tf.int32)))
    return (frozen.graph.as_graph_def().SerializeToString(),
            [tensor.name for tensor in frozen.inputs],
            frozen.outputs[0].name)


def _ops_run_in_session(graph_def, inputs, output, feeds):
    """The ops TensorFlow's executor ran (after its rewrites, oneDNN's
    included) for the serialized `graph_def`, fed `feeds` at `inputs`, as
    (op type, number of inputs) pairs, and the `output` value: run in a TF1
    Session (as TF Serving runs a SavedModel) with a full trace."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(
            tf.compat.v1.GraphDef.FromString(graph_def), name="")
    with tf.compat.v1.Session(graph=graph) as session:
        metadata = tf.compat.v1.RunMetadata()
        value = session.run(
            output, dict(zip(inputs, feeds)),
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
    return ran, value


def _inference_ops_run(forward, x, mask):
    """`_ops_run_in_session` of `forward(x, mask)`'s frozen graph."""
    graph_def, inputs, output = _frozen_graph(forward, x)
    return _ops_run_in_session(graph_def, inputs, output, (x, mask))


# Runs `_ops_run_in_session` on the files argv[1] (GraphDef) and argv[2]
# (inputs, output name and feeds) in a new process; prints the ops as JSON.
_RUN_IN_FRESH_PROCESS = """
import json, sys
import numpy as np
from tests.inference.test_inference_layers import _ops_run_in_session
spec = np.load(sys.argv[2], allow_pickle=False)
ran, value = _ops_run_in_session(
    open(sys.argv[1], "rb").read(), list(spec["inputs"]), str(spec["output"]),
    (spec["x"], spec["mask"]))
np.save(sys.argv[3], value)
print(json.dumps(ran))
"""


@pytest.mark.parametrize("batch,seq", [(1, 7), (2, 22), (3, 19), (4, 40)])
def test_attention_inference_kernels_follow_the_problem_size(batch, seq):
    """At inference TensorFlow runs attention's batch matmuls as
    `BatchMatMulV3` (its own kernels, which oneDNN does not take over) up to
    `SMALL_ATTENTION_SCORES` scores per head, and as the default
    `BatchMatMulV2` (oneDNN's where it is on) above; both give the
    reference values, padding masked."""
    layer = MultiHeadSelfAttention(num_heads=2, dropout=0.0)
    layer.build((None, None, 8))
    _randomize(layer)
    x = RNG.normal(size=(batch, seq, 8)).astype(np.float32)
    mask = np.ones((batch, seq), np.int32)
    mask[0, seq // 2:] = 0
    ran, output = _inference_ops_run(
        lambda x, mask: self_attention(layer, x, mask), x, mask)
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



def test_transformer_block_residual_adds_run_inside_their_matmuls(
        tmp_path, run_fresh_python):
    """With oneDNN, the block's inference graph adds each residual inside
    the projection before it (the attention output and the second
    feed-forward matmul: one fused kernel each, with 4 inputs: rows,
    kernel, bias, residual), and computes the block's values. The graph
    runs in a new process, as a server loads it: in a process that has run
    many other graphs (a test worker) the rewrite has been seen not to
    happen."""
    from tensorflow.python.util import _pywrap_util_port

    from tests.conftest import REPO_ROOT

    if not _pywrap_util_port.IsMklEnabled():
        pytest.skip("this TensorFlow build has no oneDNN")
    block = _tiny_block()
    x = RNG.normal(size=(2, 4, 8)).astype(np.float32)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], np.int32)
    graph_def, inputs, output_name = _frozen_graph(
        lambda x, mask: transformer_block(block, x, mask), x)
    (tmp_path / "graph.pb").write_bytes(graph_def)
    np.savez(tmp_path / "spec.npz", inputs=np.array(inputs),
             output=np.array(output_name), x=x, mask=mask)
    ran = [tuple(op) for op in run_fresh_python(
        _RUN_IN_FRESH_PROCESS, tmp_path / "graph.pb", tmp_path / "spec.npz",
        tmp_path / "output.npy", env={"PYTHONPATH": str(REPO_ROOT)})]
    output = np.load(tmp_path / "output.npy")
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
    packed = transformer_block(block, packing.pack(x), mask, packing=packing)
    np.testing.assert_allclose(np.asarray(packed), expected[mask == 1],
                               atol=1e-4)
    first = transformer_block(block, packing.pack(x), mask, packing=packing,
                              first_token_only=True)
    np.testing.assert_allclose(np.asarray(first), expected[:, :1], atol=1e-4)


def test_feed_forward_shards_cover_the_kernels_column_by_column():
    block = _tiny_block()
    shards = feed_forward_shards(block, 3)
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
    """Given shards, the inference path (padded and packed) reads the
    block's feed-forward layer from them, not from its kernels."""
    block = _tiny_block()
    x = RNG.normal(size=(3, 5, 8)).astype(np.float32)
    mask = PACKING_MASK[:3]
    packing = TokenPacking(mask)
    shards = feed_forward_shards(block, 3)
    padded = transformer_block(block, x, mask, shards=shards)
    packed = transformer_block(block, packing.pack(x), mask, packing=packing,
                               shards=shards)
    expected = _block_reference(x, mask, block)
    np.testing.assert_allclose(padded, expected, atol=1e-4)
    np.testing.assert_allclose(packed, expected[mask == 1], atol=1e-4)

    shifted = [(inner, bias + 1.0, outer) for inner, bias, outer in shards]
    inference = transformer_block(block, x, mask, shards=shifted)
    block.intermediate_dense.bias.assign(
        block.intermediate_dense.bias.numpy() + 1.0)
    np.testing.assert_allclose(inference, _block_reference(x, mask, block),
                               atol=1e-4)



def test_compiled_encoder_equals_the_keras_forward_on_bucketed_shapes():
    """`CompiledEncoder` pads a [3, 7] request (trailing padding cut to 5)
    to the bucket [4, 16] and cuts its outputs back: real positions as the
    Keras forward, padding positions zeros, pooled output and first-token
    output too."""
    import keras

    from tfbert.config import BertConfig
    from tfbert.inference import CompiledEncoder
    from tfbert.inference.compiled import size_buckets
    from tfbert.models import BertEncoder

    assert size_buckets(128, 16) == [16, 32, 64, 128]
    assert size_buckets(64) == [1, 2, 4, 8, 16, 32, 64]
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(BertConfig(
        vocab_size=50, hidden_size=8, num_layers=2, num_heads=2,
        intermediate_size=16, max_position_embeddings=32))
    mask = np.zeros([3, 7], np.int32)
    mask[0, :5], mask[1, :2], mask[2, :4] = 1, 1, 1
    inputs = {"input_word_ids": RNG.integers(1, 50, (3, 7)).astype(np.int32)
              * mask, "input_mask": mask,
              "input_type_ids": np.zeros_like(mask)}
    expected = {name: np.asarray(value) for name, value in
                encoder(inputs, training=False).items()}
    compiled = CompiledEncoder(encoder, None, max_seq_length=32, max_batch=4)
    assert compiled.warmup_shapes() == [(b, s) for b in (1, 2, 4)
                                        for s in (16, 32)]
    outputs = compiled(inputs)
    sequence = np.asarray(outputs["sequence_output"])
    assert sequence.shape == (3, 7, 8)
    np.testing.assert_allclose(sequence[mask == 1],
                               expected["sequence_output"][mask == 1],
                               atol=1e-5)
    assert not sequence[mask == 0].any()
    np.testing.assert_allclose(outputs["pooled_output"],
                               expected["pooled_output"], atol=1e-5)
    first = compiled(inputs, first_token_only=True)["sequence_output"]
    np.testing.assert_allclose(first, expected["sequence_output"][:, :1],
                               atol=1e-5)
