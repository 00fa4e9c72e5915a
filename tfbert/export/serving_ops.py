"""Which ops a TensorFlow Serving binary can run.

TF Serving links every core TensorFlow op and tensorflow-text's ops, but an
older tensorflow-text than ours (see KNOWLEDGE notes in the README): servers
from 2.10 on have the classic BertTokenizer ops and FastWordpiece, while
`FastBertNormalize` needs 2.12 and the `RoundRobinTrim` op 2.20.
"""

import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

# tensorflow-text ops present in every TF Serving release from 2.10.
TF_TEXT_OPS_SINCE_2_10 = frozenset({
    "CaseFoldUTF8", "CaseFoldUTF8WithOffsets",
    "NormalizeUTF8", "NormalizeUTF8WithOffsetsMap",
    "FindSourceOffsets",
    "RegexSplitWithOffsets",
    "WordpieceTokenizeWithOffsets",
    "FastWordpieceTokenizeWithOffsets",
    "FastWordpieceDetokenize",
    "ViterbiConstrainedSequence",
    # ALBERT's SentencePiece (tf-text's own kernels since it replaced
    # tf_sentencepiece, long before 2.10; the offsets op is registered by
    # the same kernel file).
    "SentencepieceOp", "SentencepieceTokenizeOp",
    "SentencepieceTokenizeWithOffsetsOp",
})


def _core_ops():
    return {name for name in dir(tf.raw_ops) if not name.startswith("_")}


def saved_model_ops(export_dir):
    """Returns the set of op types used anywhere in a SavedModel (graph and
    function library)."""
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    ops = set()
    for meta_graph in proto.meta_graphs:
        ops.update(node.op for node in meta_graph.graph_def.node)
        for function in meta_graph.graph_def.library.function:
            ops.update(node.op for node in function.node_def)
    function_names = {f.signature.name for mg in proto.meta_graphs
                      for f in mg.graph_def.library.function}
    return ops - function_names


def unservable_ops(export_dir):
    """Ops of the SavedModel that TF Serving 2.10+ does not link."""
    allowed = _core_ops() | TF_TEXT_OPS_SINCE_2_10
    return sorted(saved_model_ops(export_dir) - allowed)


def check_serving_ops(export_dir):
    """Raises ValueError naming the ops TF Serving 2.10+ cannot run."""
    bad = unservable_ops(export_dir)
    if bad:
        raise ValueError(
            f"{export_dir} uses ops that TF Serving 2.10+ does not link: "
            f"{', '.join(bad)}. Use the classic tokenizer ops (see README).")
