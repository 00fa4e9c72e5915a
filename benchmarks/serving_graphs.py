"""Side measurements of raw-text exports in the graph TF Serving runs.

    PYTHONPATH=. python -m benchmarks.serving_graphs \
      --exports=runs/serving_base/export/1,runs/serving_erf/export/1 \
      [--rounds=5] [--profile] [--tokenizer=runs/serving/hf]

Each export's `serving_default` is loaded into its own TF1 `Session` (as TF
Serving's loader does), all in this one process, and timed interleaved:
per round and export, the batch-1 p50 over the first `--latency_sentences`
SST-2 dev sentences and the sentences/s of `--batches` batches of 32. The
spread between rounds on a 2-core VM is often 10-20 %, so compare exports
only within one run and over several rounds; `benchmarks/serving.py` is
the end-to-end benchmark (fresh processes, HF and ONNX Runtime).

With `--tokenizer` (an HF tokenizer directory with the exports' vocabulary)
the exports' `serve_token_ids` is timed instead, fed that tokenizer's ids
padded to the signature's `max_seq_length`, as TF Serving clients send them
(tokenized before the timed calls).

The first export is the reference: the others' probabilities must be within
`--max_prob_diff` of its on the timed batches (else the run stops).

`--profile` also traces `--profile_calls` calls per export and batch size
(`RunOptions.FULL_TRACE`) and prints the op time summed by op type. Tracing
overstates small kernels: use it to see where the time goes, and the
untraced rounds to see what a change gained.

`--op_counts` also counts the ops one traced batch-1 call of the first
latency sentence executes, per export, by stage (the name scopes of the
graph: the tokenizer, the input checks, packing, embeddings, each block,
the head; "signature" is the calls' plumbing) and, of those, the ops that
carry no arithmetic (`NO_ARITHMETIC`: shapes, reshapes, casts, gathers,
slices, control flow, variable reads, constants). The per-head gather
indices of the packing are computed in the first block that needs them.

oneDNN follows this process's `TF_ENABLE_ONEDNN_OPTS`.
"""

import collections
import json
import re
import time

import numpy as np
from absl import app, flags

from benchmarks.serving import batch1_latencies_ms, onednn_enabled, read_dev

FLAGS = flags.FLAGS


def define_flags():
    """This program's flags (defined only when it runs, so that other
    benchmarks can import `SessionExport`)."""
    flags.DEFINE_list("exports", None, "SavedModel version directories.")
    flags.DEFINE_integer("rounds", 5, "Timed rounds per export.")
    flags.DEFINE_integer("latency_sentences", 50, "Sentences sent one by one.")
    flags.DEFINE_integer("batches", 8, "Batches of 32 for the throughput.")
    flags.DEFINE_float("max_prob_diff", 1e-4,
                       "Largest allowed probability difference from the first "
                       "export.")
    flags.DEFINE_string("tokenizer", None,
                        "HF tokenizer directory: time serve_token_ids with its "
                        "ids, padded to max_seq_length, instead of "
                        "serving_default.")
    flags.DEFINE_bool("profile", False, "Also print op time by op type.")
    flags.DEFINE_integer("profile_calls", 8, "Traced calls per batch size.")
    flags.DEFINE_bool("op_counts", False,
                      "Also print the ops of one batch-1 call by stage.")
    flags.mark_flag_as_required("exports")


BATCH = 32
# Op types that move, reshape, select or read data without computing on it.
NO_ARITHMETIC = frozenset((
    "Reshape", "Cast", "GatherV2", "Shape", "ShapeN", "Size", "Rank",
    "StridedSlice", "Slice", "Pack", "Unpack", "ConcatV2", "ExpandDims",
    "Squeeze", "Identity", "IdentityN", "Switch", "Merge", "Const",
    "ReadVariableOp", "Fill", "Range", "Where", "Pad", "PadV2", "Transpose",
    "NoOp", "_Recv", "_Send", "BroadcastTo", "BroadcastArgs", "Tile",
    "SelectV2", "Select", "OnesLike", "ZerosLike", "StopGradient"))
# A node's stage: the first of these name-scope components in its name.
_STAGES = re.compile(r"(?:^|/)(bert_preprocessor|Assert|packing|embeddings|"
                     r"block_\d+|head|pooler)(?:_\d+)?/")


class SessionExport:
    """One export's classifier signature, run as TF Serving runs it:
    `serving_default` (one text input), or `serve_token_ids` when a
    `tokenizer` (a `transformers` tokenizer) is given to make its inputs."""

    def __init__(self, path, tokenizer=None):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

        self._tf = tf
        self._tokenizer = tokenizer
        graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=graph)
        with graph.as_default():
            meta_graph = tf.compat.v1.saved_model.loader.load(
                self.session, ["serve"], path)
        self.signature = ("serving_default" if tokenizer is None
                          else "serve_token_ids")
        signature = meta_graph.signature_def[self.signature]
        if ((tokenizer is None and len(signature.inputs) != 1)
                or "probabilities" not in signature.outputs):
            raise SystemExit(f"{path}: {self.signature} takes "
                             f"{sorted(signature.inputs)} and returns "
                             f"{sorted(signature.outputs)}; this benchmark "
                             "needs a single-sentence classifier export "
                             "(one text input, 'probabilities' out)")
        self._inputs = {name: info.name
                        for name, info in signature.inputs.items()}
        self._outputs = {name: info.name
                         for name, info in signature.outputs.items()}
        if tokenizer is not None:
            shape = signature.inputs["input_word_ids"].tensor_shape
            self.seq_length = shape.dim[1].size

    def request(self, sentences):
        """The signature's inputs for a batch of sentences."""
        if self._tokenizer is None:
            return {name: sentences for name in self._inputs}
        ids = self._tokenizer(sentences, padding="max_length",
                              max_length=self.seq_length, truncation=True,
                              return_tensors="np")
        return {"input_word_ids": ids["input_ids"].astype(np.int32),
                "input_mask": ids["attention_mask"].astype(np.int32),
                "input_type_ids": ids["token_type_ids"].astype(np.int32)}

    def __call__(self, request, options=None, run_metadata=None):
        return self.session.run(
            self._outputs,
            {self._inputs[name]: value for name, value in request.items()},
            options=options, run_metadata=run_metadata)

    def executed_ops(self, request):
        """(node name, op type) of every op one traced call runs."""
        tf = self._tf
        options = tf.compat.v1.RunOptions(
            trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        metadata = tf.compat.v1.RunMetadata()
        self(request, options, metadata)
        return [(node.node_name, _op_type(node))
                for device in metadata.step_stats.dev_stats
                for node in device.node_stats]

    def op_times(self, requests):
        """Op type -> (summed microseconds, op count) per call."""
        tf = self._tf
        options = tf.compat.v1.RunOptions(
            trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        micros, counts = collections.Counter(), collections.Counter()
        for request in requests:
            metadata = tf.compat.v1.RunMetadata()
            self(request, options, metadata)
            for device in metadata.step_stats.dev_stats:
                for node in device.node_stats:
                    op = _op_type(node)
                    micros[op] += node.op_end_rel_micros - node.op_start_rel_micros
                    counts[op] += 1
        return {op: (micros[op] / len(requests), counts[op] / len(requests))
                for op in micros}


def _op_type(node):
    """The op type of a traced node (its timeline label reads
    `name = Type(inputs)`), or its name where the label has none."""
    label = node.timeline_label
    return (label.split(" = ", 1)[1].split("(")[0].strip()
            if " = " in label else node.node_name)


def op_counts_by_stage(ops):
    """Stage -> (ops, ops without arithmetic) of `executed_ops`' list."""
    counts = collections.defaultdict(lambda: [0, 0])
    for name, op in ops:
        match = _STAGES.search(name)
        stage = {None: "signature", "bert_preprocessor": "tokenizer",
                 "Assert": "input checks", "pooler": "head"}.get(
            match and match.group(1), match and match.group(1))
        counts[stage][0] += 1
        counts[stage][1] += op in NO_ARITHMETIC
    return dict(counts)


def _print_op_counts(exports, requests):
    """A Markdown table: stage -> ops (no arithmetic) per export, of one
    call with its `requests[path]`."""
    tables = {path: op_counts_by_stage(export.executed_ops(requests[path]))
              for path, export in exports.items()}
    stages = sorted({stage for table in tables.values() for stage in table},
                    key=lambda s: (not s.startswith("block"), s))
    print("ops of one batch-1 call by stage (of which without arithmetic):")
    print("| stage | " + " | ".join(tables) + " |")
    print("| --- |" + " ---: |" * len(tables))
    for stage in stages + ["total"]:
        cells = []
        for table in tables.values():
            ops, bare = (map(sum, zip(*table.values())) if stage == "total"
                         else table.get(stage, (0, 0)))
            cells.append(f"{ops} ({bare})")
        print(f"| {stage} | " + " | ".join(cells) + " |")


def _print_profile(name, times, top=15):
    total = sum(us for us, _ in times.values())
    print(f"  {name}: {total / 1e3:.1f} ms of op time per call, "
          f"{sum(n for _, n in times.values()):.0f} ops")
    for op, (us, n) in sorted(times.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"    {op:34s} {us / 1e3:8.2f} ms {n:6.1f} ops "
              f"{100 * us / total:5.1f} %")


def main(argv):
    del argv
    sentences, _ = read_dev(max(FLAGS.latency_sentences,
                                BATCH * FLAGS.batches))
    singles = sentences[:FLAGS.latency_sentences]
    batches = [sentences[i * BATCH:(i + 1) * BATCH]
               for i in range(FLAGS.batches)]
    tokenizer = None
    if FLAGS.tokenizer:
        import transformers

        tokenizer = transformers.AutoTokenizer.from_pretrained(FLAGS.tokenizer)
    exports = {path: SessionExport(path, tokenizer) for path in FLAGS.exports}
    print(f"oneDNN: {'on' if onednn_enabled() else 'off'}; signature "
          f"{next(iter(exports.values())).signature}")
    single_requests = {path: [export.request([s]) for s in singles]
                       for path, export in exports.items()}
    batch_requests = {path: [export.request(b) for b in batches]
                      for path, export in exports.items()}

    reference = None
    for path, export in exports.items():
        probabilities = np.concatenate(
            [export(r)["probabilities"] for r in batch_requests[path]])
        if reference is None:
            reference = probabilities
            continue
        diff = float(np.abs(probabilities - reference).max())
        print(f"{path}: max abs probability difference {diff:.1e}")
        if diff > FLAGS.max_prob_diff:
            raise SystemExit(f"{path} computes other probabilities than "
                             f"{FLAGS.exports[0]} ({diff:.1e})")

    def latencies(path, count=None):
        export = exports[path]
        return batch1_latencies_ms(lambda one: export(one[0]),
                                   single_requests[path][:count])

    for path in exports:
        latencies(path, 5)  # warm-up

    results = {path: {"p50_ms": [], "sentences_per_s": []} for path in exports}
    for _ in range(FLAGS.rounds):
        for path, export in exports.items():
            p50 = float(np.median(latencies(path)))
            start = time.perf_counter()
            for request in batch_requests[path]:
                export(request)
            seconds = time.perf_counter() - start
            results[path]["p50_ms"].append(p50)
            results[path]["sentences_per_s"].append(
                BATCH * len(batches) / seconds)
    for path, result in results.items():
        print(f"{path}: batch-1 p50 ms "
              f"{[round(v, 1) for v in result['p50_ms']]} "
              f"(median {np.median(result['p50_ms']):.2f}); batch 32 "
              f"sentences/s {[round(v) for v in result['sentences_per_s']]} "
              f"(median {np.median(result['sentences_per_s']):.1f})")

    if FLAGS.op_counts:
        _print_op_counts(exports, {path: requests[0] for path, requests
                                   in single_requests.items()})
    if FLAGS.profile:
        for label, requests in (("batch 1", single_requests),
                                ("batch 32", batch_requests)):
            print(f"op time by type, {label}:")
            for path, export in exports.items():
                _print_profile(path, export.op_times(
                    requests[path][:FLAGS.profile_calls]))
    print(json.dumps(results))


if __name__ == "__main__":
    define_flags()
    app.run(main)
