"""Side measurements of raw-text exports in the graph TF Serving runs.

    PYTHONPATH=. python -m benchmarks.serving_graphs \
      --exports=runs/serving_base/export/1,runs/serving_erf/export/1 \
      [--rounds=5] [--profile]

Each export's `serving_default` is loaded into its own TF1 `Session` (as TF
Serving's loader does), all in this one process, and timed interleaved:
per round and export, the batch-1 p50 over the first `--latency_sentences`
SST-2 dev sentences and the sentences/s of `--batches` batches of 32. The
spread between rounds on a 2-core VM is often 10-20 %, so compare exports
only within one run and over several rounds; `benchmarks/serving.py` is
the end-to-end benchmark (fresh processes, HF and ONNX Runtime).

The first export is the reference: the others' probabilities must be within
`--max_prob_diff` of its on the timed batches (else the run stops).

`--profile` also traces `--profile_calls` calls per export and batch size
(`RunOptions.FULL_TRACE`) and prints the op time summed by op type. Tracing
overstates small kernels: use it to see where the time goes, and the
untraced rounds to see what a change gained.

oneDNN follows this process's `TF_ENABLE_ONEDNN_OPTS`.
"""

import collections
import json
import time

import numpy as np
from absl import app, flags

from benchmarks.serving import batch1_latencies_ms, onednn_enabled, read_dev

FLAGS = flags.FLAGS

flags.DEFINE_list("exports", None, "SavedModel version directories.")
flags.DEFINE_integer("rounds", 5, "Timed rounds per export.")
flags.DEFINE_integer("latency_sentences", 50, "Sentences sent one by one.")
flags.DEFINE_integer("batches", 8, "Batches of 32 for the throughput.")
flags.DEFINE_float("max_prob_diff", 1e-4,
                   "Largest allowed probability difference from the first "
                   "export.")
flags.DEFINE_bool("profile", False, "Also print op time by op type.")
flags.DEFINE_integer("profile_calls", 8, "Traced calls per batch size.")
flags.mark_flag_as_required("exports")

BATCH = 32


class SessionExport:
    """One export's `serving_default`, run as TF Serving runs it."""

    def __init__(self, path):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

        self._tf = tf
        graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=graph)
        with graph.as_default():
            meta_graph = tf.compat.v1.saved_model.loader.load(
                self.session, ["serve"], path)
        signature = meta_graph.signature_def["serving_default"]
        if (len(signature.inputs) != 1
                or "probabilities" not in signature.outputs):
            raise SystemExit(f"{path}: serving_default takes "
                             f"{sorted(signature.inputs)} and returns "
                             f"{sorted(signature.outputs)}; this benchmark "
                             "needs a single-sentence classifier export "
                             "(one text input, 'probabilities' out)")
        (self._input,) = [info.name for info in signature.inputs.values()]
        self._outputs = {name: info.name
                         for name, info in signature.outputs.items()}

    def __call__(self, sentences, options=None, run_metadata=None):
        return self.session.run(self._outputs, {self._input: sentences},
                                options=options, run_metadata=run_metadata)

    def op_times(self, batches):
        """Op type -> (summed microseconds, op count) per call."""
        tf = self._tf
        options = tf.compat.v1.RunOptions(
            trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        micros, counts = collections.Counter(), collections.Counter()
        for sentences in batches:
            metadata = tf.compat.v1.RunMetadata()
            self(sentences, options, metadata)
            for device in metadata.step_stats.dev_stats:
                for node in device.node_stats:
                    label = node.timeline_label
                    op = (label.split("=")[-1].split("(")[0].strip()
                          if "=" in label else node.node_name)
                    micros[op] += node.op_end_rel_micros - node.op_start_rel_micros
                    counts[op] += 1
        return {op: (micros[op] / len(batches), counts[op] / len(batches))
                for op in micros}


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
    exports = {path: SessionExport(path) for path in FLAGS.exports}
    print(f"oneDNN: {'on' if onednn_enabled() else 'off'}")

    reference = None
    for path, export in exports.items():
        probabilities = np.concatenate(
            [export(b)["probabilities"] for b in batches])
        if reference is None:
            reference = probabilities
            continue
        diff = float(np.abs(probabilities - reference).max())
        print(f"{path}: max abs probability difference {diff:.1e}")
        if diff > FLAGS.max_prob_diff:
            raise SystemExit(f"{path} computes other probabilities than "
                             f"{FLAGS.exports[0]} ({diff:.1e})")
    for export in exports.values():
        batch1_latencies_ms(export, singles[:5])  # warm-up

    results = {path: {"p50_ms": [], "sentences_per_s": []} for path in exports}
    for _ in range(FLAGS.rounds):
        for path, export in exports.items():
            latencies = batch1_latencies_ms(export, singles)
            start = time.perf_counter()
            for batch in batches:
                export(batch)
            seconds = time.perf_counter() - start
            results[path]["p50_ms"].append(float(np.median(latencies)))
            results[path]["sentences_per_s"].append(
                BATCH * len(batches) / seconds)
    for path, result in results.items():
        print(f"{path}: batch-1 p50 ms "
              f"{[round(v, 1) for v in result['p50_ms']]} "
              f"(median {np.median(result['p50_ms']):.2f}); batch 32 "
              f"sentences/s {[round(v) for v in result['sentences_per_s']]} "
              f"(median {np.median(result['sentences_per_s']):.1f})")

    if FLAGS.profile:
        for label, calls in (("batch 1", [[s] for s in singles]),
                             ("batch 32", batches)):
            print(f"op time by type, {label}:")
            for path, export in exports.items():
                _print_profile(path, export.op_times(
                    calls[:FLAGS.profile_calls]))
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
