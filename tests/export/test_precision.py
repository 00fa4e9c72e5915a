"""Exports at each precision: the graph computes in the precision asked for,
stays within stated bounds of the float32 export, and passes the TF Serving
op check."""

import collections
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

from tensorflow.core.protobuf import saved_model_pb2

from tests.export.conftest import (compiled_functions, replay_warmup,
                                  serving_module)
from tfbert.export import serving_module as serving_module_lib
from tfbert.export import (EXPORT_PRECISIONS, export_saved_model,
                           serving_model, unservable_ops)
from tfbert_config.export import RequestLimits

# Every test exports and loads SavedModels in both precisions (a module
# fixture, ~45 s on a busy machine).
pytestmark = pytest.mark.slow

KINDS = ["classifier", "squad", "ner"]
# What an export computes in: each precision, and bfloat16 with its kernels
# as graph constants (`export_saved_model(constant_kernels=True)`).
CONSTANT_KERNELS = "bfloat16+constant_kernels"
VARIANTS = [*EXPORT_PRECISIONS, CONSTANT_KERNELS]
# float32 with the encoder XLA-compiled (`export_saved_model(xla=True)`),
# bounded to 2 windows per request: batch buckets 1 and 2 (fewer shapes
# for the warmup to compile).
XLA = "float32+xla"
MATMULS = {"MatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum"}
# bfloat16 keeps 8 significant bits; through one tiny layer the outputs
# move by a few 1e-3 (measured: <= 4e-3); these bounds leave ~5x room.
BOUNDS = {"classifier": ("probabilities", 2e-2),
          "squad": ("start_logits", 2e-2),
          "ner": ("logits", 2e-2)}
TEXTS = {
    "classifier": {"sentence1": ["A gripping, beautifully shot film.",
                                 "Dull."],
                   "sentence2": ["I loved it.", "It was fine"]},
    "squad": {"question": ["Where is the cat?", "Who wrote it?"],
              "context": ["The cat sat on the mat near the door.",
                          "It was written by Ada Lovelace in 1843."]},
    "ner": {"text": ["Ada Lovelace lived in London.", "Paris is big."]},
}


def element_type(node):
    """A matmul node's input element type (`BatchMatMulV3` names it Ta)."""
    return tf.dtypes.as_dtype(
        node.attr["Ta" if "Ta" in node.attr else "T"].type).name


def matmul_dtypes(concrete_function):
    """Counter of the element types of every matmul in a (loaded) concrete
    function's graph, nested functions included."""
    graph = concrete_function.graph.as_graph_def()
    nodes = list(graph.node) + [node for function in graph.library.function
                                for node in function.node_def]
    return collections.Counter(element_type(node) for node in nodes
                               if node.op in MATMULS)


@pytest.fixture(scope="module")
def precision_exports(serving_modules, tokenizer, exports, tmp_path_factory):
    """(kind, variant in VARIANTS) -> version directory, the float32 ones
    being the shared exports of conftest."""
    base = tmp_path_factory.mktemp("precision_exports")
    paths = {(kind, "float32"): exports[kind] for kind in KINDS}
    for kind in KINDS:
        model = serving_model(serving_modules[kind].model, "bfloat16")
        paths[kind, "bfloat16"] = export_saved_model(
            serving_module(kind, model, tokenizer), str(base / kind))
        paths[kind, CONSTANT_KERNELS] = export_saved_model(
            serving_module(kind, model, tokenizer),
            str(base / f"{kind}_constant"), constant_kernels=True)
        paths[kind, XLA] = export_saved_model(
            serving_module(kind, serving_modules[kind].model, tokenizer),
            str(base / f"{kind}_xla"), xla=True,
            limits=RequestLimits(max_windows=2))
    return paths


@pytest.fixture(scope="module")
def loaded(precision_exports):
    return {key: tf.saved_model.load(path)
            for key, path in precision_exports.items()}


def test_every_precision_is_tested():
    assert set(EXPORT_PRECISIONS) == {"float32", "bfloat16"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("signature", ["serving_default", "serve_token_ids"])
def test_matmuls_run_in_the_requested_precision(kind, signature,
                                                loaded):
    by_precision = {
        variant: matmul_dtypes(loaded[kind, variant].signatures[signature])
        for variant in VARIANTS}
    # The variable exports run the one block's feed-forward layer as two
    # matmuls per shard, the constant-kernel export as two.
    extra = 2 * (serving_module_lib.FEED_FORWARD_SHARDS - 1)
    assert by_precision[CONSTANT_KERNELS] == by_precision["bfloat16"] - \
        collections.Counter({"bfloat16": extra})
    assert set(by_precision["float32"]) == {"float32"}
    # One layer: Q, K, V, attention output, two feed-forward kernels and
    # the two attention products; the pooler too in classifiers.
    assert by_precision["bfloat16"]["bfloat16"] >= 8
    # Only the logits layer stays float32.
    assert by_precision["bfloat16"]["float32"] <= 1
    assert sum(by_precision["bfloat16"].values()) == sum(
        by_precision["float32"].values())


# Runs each export's serving_default once with oneDNN on (TensorFlow's
# default on CPUs with AVX512_VNNI/AVX512_BF16/AMX; TF Serving reads the same
# variable) and prints, per export, the matmul and erf ops of the graphs
# that ran, after TensorFlow's rewrites.
_RUN_GRAPH_OPS = """
import collections, json, sys
import tensorflow as tf
import tensorflow_text
from tensorflow.python.eager import context
from tensorflow.python.util import _pywrap_util_port
found = {"onednn": _pywrap_util_port.IsMklEnabled()}
requests = json.loads(sys.stdin.read())
for path, request in requests.items():
    signature = tf.saved_model.load(path).signatures["serving_default"]
    run = context.context()
    run.enable_run_metadata()
    signature(**{name: tf.constant(value) for name, value in request.items()})
    metadata = run.export_run_metadata()
    run.disable_run_metadata()
    ops = collections.Counter()
    for function in metadata.function_graphs:
        for graph in function.partition_graphs:
            for node in graph.node:
                if "MatMul" in node.op or node.op in ("Erf", "Erfc"):
                    fused = [op.decode() for op in node.attr["fused_ops"].list.s]
                    dtype = tf.dtypes.as_dtype(node.attr[
                        "Ta" if "Ta" in node.attr else "T"].type).name
                    ops["+".join([node.op] + fused) + ":" + dtype] += 1
    found[path] = ops
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def onednn_run_ops(precision_exports, run_fresh_python):
    requests = {path: TEXTS[kind]
                for (kind, _), path in precision_exports.items()}
    return run_fresh_python(_RUN_GRAPH_OPS, stdin=json.dumps(requests),
                            env={"TF_ENABLE_ONEDNN_OPTS": "1"})


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", KINDS)
def test_matmul_bias_and_gelu_run_as_one_onednn_kernel(kind, variant,
                                                       onednn_run_ops,
                                                       precision_exports):
    """With oneDNN, each feed-forward matmul + bias + exact GELU runs as one
    matmul kernel with BiasAdd and GeluExact fused (an unfused bfloat16 GELU
    costs twice its matmul): the export must write GELU in a form
    TensorFlow recognizes, also with constant kernels."""
    if not onednn_run_ops["onednn"]:
        pytest.skip("this TensorFlow build has no oneDNN")
    ops = onednn_run_ops[precision_exports[kind, variant]]
    precision = variant.split("+")[0]
    if not any(op.startswith("_Mkl") and op.endswith(precision)
               for op in ops):
        pytest.skip(f"oneDNN runs no {precision} matmul on this CPU")
    assert not [op for op in ops if op.split(":")[0] in ("Erf", "Erfc")], ops
    # One GELU per feed-forward shard (the whole feed-forward layer with
    # constant kernels); the tiny exports have one block.
    fused = {op: n for op, n in ops.items()
             if "+BiasAdd+GeluExact:" in op and op.endswith(precision)}
    shards = (1 if variant == CONSTANT_KERNELS
              else serving_module_lib.FEED_FORWARD_SHARDS)
    assert sum(fused.values()) == shards, ops


@pytest.mark.parametrize("kind", KINDS)
def test_float32_residual_adds_run_inside_their_matmuls(kind, onednn_run_ops,
                                                       precision_exports):
    """With oneDNN, a float32 export adds the attention's residual inside
    its output projection (BiasAdd + Add fused; the tiny exports have one
    block). The feed-forward shards' outputs and the residual are summed by
    one AddN (Grappler merges the adds), so no second fusion there."""
    if not onednn_run_ops["onednn"]:
        pytest.skip("this TensorFlow build has no oneDNN")
    ops = onednn_run_ops[precision_exports[kind, "float32"]]
    fused = sum(n for op, n in ops.items()
                if op.startswith("_Mkl") and "+BiasAdd+Add:" in op)
    assert fused == 1, ops


@pytest.mark.parametrize("kind", KINDS)
def test_bfloat16_weights_are_stored_in_bfloat16(kind, loaded):
    signature = loaded[kind, "bfloat16"].signatures["serving_default"]
    dtypes = collections.Counter(
        v.dtype.name for v in signature.variables
        if v.dtype.is_floating)
    # float32: the LayerNorm scales and offsets and the logits layer.
    assert dtypes["bfloat16"] > dtypes["float32"]


def _saved_matrices(path):
    """(Counter of (dtype, shape) of the floating rank >= 2 constants in
    the SavedModel's graph, the same of its functions' constants, the same
    of its checkpoint's rank >= 2 tensors)."""
    saved_model = saved_model_pb2.SavedModel()
    with open(f"{path}/saved_model.pb", "rb") as f:
        saved_model.ParseFromString(f.read())
    graph = saved_model.meta_graphs[0].graph_def

    def constants(nodes):
        found = collections.Counter()
        for node in nodes:
            if node.op != "Const":
                continue
            shape = tuple(d.size for d in
                          node.attr["value"].tensor.tensor_shape.dim)
            dtype = tf.dtypes.as_dtype(node.attr["dtype"].type)
            if dtype.is_floating and len(shape) >= 2:
                found[dtype.name, shape] += 1
        return found

    reader = tf.train.load_checkpoint(f"{path}/variables/variables")
    dtypes = reader.get_variable_to_dtype_map()
    checkpoint = collections.Counter(
        (dtypes[name].name, tuple(shape))
        for name, shape in reader.get_variable_to_shape_map().items()
        if len(shape) >= 2)
    functions = [node for function in graph.library.function
                 for node in function.node_def]
    return constants(graph.node), constants(functions), checkpoint


@pytest.mark.parametrize("kind", KINDS)
def test_constant_kernels_are_stored_once_as_constants(
        kind, serving_modules, precision_exports):
    """With constant kernels each Dense kernel is a graph constant, stored
    once (bfloat16 but for the float32 logits layer), and the checkpoint
    holds the other weights only; by default every weight is a
    variable, the feed-forward kernels stored as their shards."""
    model = serving_model(serving_modules[kind].model, "bfloat16")
    matrices = collections.Counter(
        (v.dtype, tuple(v.shape)) for v in model.variables
        if len(v.shape) >= 2)
    kernels = collections.Counter(
        (v.dtype, tuple(v.shape)) for v in model.variables
        if v.name == "kernel")
    # One block, hidden size 16, intermediate size 32 (conftest): its
    # feed-forward kernels [16, 32] and [32, 16] are stored as two column
    # shards each, [16, 16] and [16, 16].
    whole = collections.Counter({("bfloat16", (16, 32)): 1,
                                 ("bfloat16", (32, 16)): 1})
    shards = collections.Counter({("bfloat16", (16, 16)): 4})
    assert serving_module_lib.FEED_FORWARD_SHARDS == 2
    assert kernels & whole == whole
    assert kernels["bfloat16", (16, 16)] >= 4  # Q, K, V, attention output
    assert sum(n for (dtype, _), n in kernels.items()
               if dtype == "float32") == 1
    graph, functions, checkpoint = _saved_matrices(
        precision_exports[kind, CONSTANT_KERNELS])
    assert not graph
    assert functions == kernels
    assert checkpoint == matrices - kernels
    graph, functions, checkpoint = _saved_matrices(
        precision_exports[kind, "bfloat16"])
    assert not (graph + functions) & matrices
    assert checkpoint == matrices - whole + shards


@pytest.mark.parametrize("variant", [CONSTANT_KERNELS, XLA])
@pytest.mark.parametrize("kind", KINDS)
def test_constant_kernel_and_xla_exports_replay_their_warmup_and_check_inputs(
        kind, variant, precision_exports, loaded):
    signatures = loaded[kind, variant].signatures
    replayed = replay_warmup(precision_exports[kind, variant], signatures)
    assert sorted(set(replayed)) == sorted(signatures)
    if variant == XLA:
        # One serve_token_ids request per bucket shape: batch 1, 2 x the
        # sequence buckets of the kind's max_seq_length (16, or 16 and 32).
        seq_buckets = {"squad": 2}.get(kind, 1)
        assert replayed.count("serve_token_ids") == 2 * seq_buckets
    ids = _token_ids(signatures["serve_token_ids"])
    ids["input_word_ids"][0, 1] = -5
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="input input_word_ids has values outside"):
        signatures["serve_token_ids"](
            **{name: tf.constant(value) for name, value in ids.items()})


def test_constant_kernels_are_refused_for_float32_and_over_the_limit(
        serving_modules, tokenizer, monkeypatch, tmp_path):
    model = serving_modules["classifier"].model
    with pytest.raises(ValueError, match="bfloat16"):
        export_saved_model(serving_module("classifier", model, tokenizer),
                           str(tmp_path), constant_kernels=True)
    monkeypatch.setattr(serving_module_lib, "MAX_CONSTANT_BYTES", 1000)
    with pytest.raises(ValueError, match="export them as variables"):
        export_saved_model(serving_module(
            "classifier", serving_model(model, "bfloat16"), tokenizer),
            str(tmp_path), constant_kernels=True)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("shards, precision, constant_kernels", [
    (0, "float32", False),
    (33, "float32", False),  # the tiny intermediate size is 32
    (2, "bfloat16", True),
])
def test_impossible_feed_forward_shards_are_refused(
        serving_modules, tokenizer, tmp_path, shards, precision,
        constant_kernels):
    model = serving_model(serving_modules["classifier"].model, precision)
    with pytest.raises(ValueError, match=f"feed_forward_shards={shards}"):
        export_saved_model(serving_module("classifier", model, tokenizer),
                           str(tmp_path), constant_kernels=constant_kernels,
                           feed_forward_shards=shards)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kind", KINDS)
def test_bfloat16_export_stays_close_to_float32(kind, loaded):
    output, bound = BOUNDS[kind]
    texts = {name: tf.constant(value) for name, value in TEXTS[kind].items()}
    results = {}
    for precision in VARIANTS:
        signatures = loaded[kind, precision].signatures
        results[precision] = signatures["serving_default"](**texts)
        ids = {name: tf.constant(value) for name, value in
               _token_ids(signatures["serve_token_ids"]).items()}
        results[precision, "ids"] = signatures["serve_token_ids"](**ids)
    for variant in ("bfloat16", CONSTANT_KERNELS):
        if kind == "classifier":
            served = results[variant][output].numpy()
            reference = results["float32"][output].numpy()
            assert served.dtype == np.float32
            np.testing.assert_allclose(served, reference, atol=bound)
            assert not np.array_equal(served, reference)
        else:
            assert {name: value.dtype for name, value in
                    results[variant].items()} == {
                name: value.dtype
                for name, value in results["float32"].items()}
        served = results[variant, "ids"][output].numpy()
        reference = results["float32", "ids"][output].numpy()
        assert served.dtype == np.float32
        np.testing.assert_allclose(served, reference, atol=bound)
        assert not np.array_equal(served, reference)


def _token_ids(signature):
    """A valid two-row request for a `serve_token_ids` signature."""
    _, specs = signature.structured_input_signature
    length = specs["input_word_ids"].shape[1]
    ids = np.zeros([2, length], np.int32)
    ids[:, :6] = [[101, 7592, 2088, 102, 2129, 102],
                  [101, 3000, 2003, 2502, 1012, 102]]
    mask = (ids != 0).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask,
            "input_type_ids": np.zeros_like(ids)}


@pytest.mark.parametrize("kind", KINDS)
def test_serving_op_check_passes_at_every_precision(kind, precision_exports):
    for variant in [*VARIANTS, XLA]:
        assert unservable_ops(precision_exports[kind, variant]) == []


@pytest.mark.parametrize("kind", KINDS)
def test_every_precision_answers_when_loaded_as_tf_serving_loads(
        kind, precision_exports):
    """TF Serving's loader restores the variables with the SavedModel's
    restore op and runs the signatures in a Session: the signatures must
    read the variables that op fills (an export that tracked Keras
    variables instead of their tf.Variables failed here)."""
    texts = TEXTS[kind]
    for variant in VARIANTS:
        with tf.Graph().as_default(), tf.compat.v1.Session() as session:
            meta_graph = tf.compat.v1.saved_model.loader.load(
                session, ["serve"], precision_exports[kind, variant])
            signature = meta_graph.signature_def["serving_default"]
            feeds = {signature.inputs[name].name: value
                     for name, value in texts.items()}
            outputs = session.run(
                {name: info.name for name, info in signature.outputs.items()},
                feeds)
        assert all(len(value) == 2 for value in outputs.values())


def test_unknown_precision_is_refused(serving_modules):
    with pytest.raises(ValueError, match="int4"):
        serving_model(serving_modules["classifier"].model, "int4")



@pytest.mark.parametrize("kind", KINDS)
def test_xla_exports_compile_the_encoder_and_answer_as_float32(
        kind, precision_exports, loaded, onednn_run_ops):
    """An XLA export holds a jit-compiled encoder, loads and runs in a
    process with only tensorflow and tensorflow_text (`onednn_run_ops`
    ran its serving_default), and answers as the float32 export, on
    requests of several lengths and batch sizes (padded to buckets)."""
    assert compiled_functions(precision_exports[kind, XLA])
    assert not compiled_functions(precision_exports[kind, "float32"])
    assert precision_exports[kind, XLA] in onednn_run_ops
    signatures = {variant: loaded[kind, variant].signatures
                  for variant in ("float32", XLA)}
    texts = TEXTS[kind]
    requests = [("serving_default", texts),
                ("serving_default", {name: values[:1]
                                     for name, values in texts.items()}),
                ("serve_token_ids",
                 _token_ids(signatures["float32"]["serve_token_ids"]))]
    for signature, request in requests:
        plain, compiled = (signatures[variant][signature](**{
            name: tf.constant(value) for name, value in request.items()})
            for variant in ("float32", XLA))
        assert sorted(compiled) == sorted(plain)
        for key, value in plain.items():
            if value.dtype.is_floating:
                np.testing.assert_allclose(compiled[key], value, atol=1e-5)
            else:
                assert compiled[key].numpy().tolist() == value.numpy().tolist()
