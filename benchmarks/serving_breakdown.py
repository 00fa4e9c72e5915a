"""Where one batch-1 request's time goes: tfbert's raw-text export against
ONNX Runtime on the same weights, split into tokenizing and the model, and
the model's kernel time into matrix products and the rest.

    python -m benchmarks.serving_breakdown --workdir=runs/serving

The export, HF directory and ONNX file are `benchmarks.serving`'s (made
the same way when missing). Everything runs in this one process; over
`--rounds` rounds, taking turns, each of these answers the first
`--latency_sentences` SST-2 dev sentences one at a time (p50 per round,
median over the rounds):

  * tfbert, text in: the export's `serving_default`, loaded into a TF1
    `Session` as TF Serving loads it (the whole request);
  * tfbert, ids in: its `serve_token_ids`, fed the HF tokenizer's ids
    padded to the signature's `max_seq_length` as a client sends them (the
    export drops trailing padding columns itself): the model without the
    tokenizer;
  * ONNX Runtime, text in: the `tokenizers` library's tokenizer +
    `InferenceSession.run` (`benchmarks.serving`'s runtime);
  * ONNX Runtime, ids in: `run` on ids tokenized beforehand;
  * the `tokenizers` tokenizer alone.

Then `--profile_calls` batch-1 calls of each model (ids in) are profiled:
TensorFlow's `RunOptions.FULL_TRACE` step stats and ONNX Runtime's own
profiler (`SessionOptions.enable_profiling`), kernel time summed per call
into matrix products (op types containing MatMul or Gemm: the dense
layers and the attention products) and everything else. Both profilers add
time to small kernels: compare the two runtimes' splits, not the profiled
sums with the untimed p50s.

Prints a Markdown table and one JSON line.
"""

import collections
import json
import os

import numpy as np
from absl import app, flags

from benchmarks import serving
from benchmarks.serving import batch1_latencies_ms, read_dev
from benchmarks.serving_graphs import SessionExport

FLAGS = flags.FLAGS


def define_flags():
    serving.define_flags()
    FLAGS.set_default("latency_sentences", 100)
    FLAGS.set_default("rounds", 3)
    flags.DEFINE_integer("profile_calls", 30,
                         "Profiled batch-1 calls per model.")


def _is_matmul(op_type):
    return "MatMul" in op_type or "Gemm" in op_type


def _split(per_call):
    """(matrix-product ms, other ms, kernels) of {op type: (us, count) per
    call}."""
    matmul = sum(us for op, (us, _) in per_call.items() if _is_matmul(op))
    other = sum(us for op, (us, _) in per_call.items() if not _is_matmul(op))
    return matmul / 1e3, other / 1e3, sum(n for _, n in per_call.values())


class OnnxModel:
    """The ONNX file and its tokenizer, the parts timed apart."""

    def __init__(self, paths, profile=False):
        import onnxruntime
        import tokenizers

        self.tokenizer = tokenizers.Tokenizer.from_file(
            os.path.join(paths["hf"], "tokenizer.json"))
        self.tokenizer.enable_truncation(FLAGS.max_seq_length)
        self.tokenizer.enable_padding(
            pad_id=self.tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = FLAGS.threads
        if profile:
            options.enable_profiling = True
            options.profile_file_prefix = os.path.join(
                os.path.abspath(FLAGS.workdir), "ort_profile")
        self.session = onnxruntime.InferenceSession(
            paths["onnx"], options, providers=["CPUExecutionProvider"])

    def ids(self, texts):
        encodings = self.tokenizer.encode_batch(texts)
        return {name: np.array([getattr(e, attribute) for e in encodings],
                               np.int64)
                for name, attribute in (("input_ids", "ids"),
                                        ("attention_mask", "attention_mask"),
                                        ("token_type_ids", "type_ids"))}

    def run(self, inputs):
        return self.session.run(["logits"], inputs)[0]

    def op_times(self, calls):
        """{op type: (us, count) per call} of the `calls` profiled calls so
        far (ends the profile)."""
        with open(self.session.end_profiling()) as f:
            events = json.load(f)
        times = collections.defaultdict(lambda: [0, 0])
        for event in events:
            if (event.get("cat") == "Node"
                    and event["name"].endswith("_kernel_time")):
                entry = times[event["args"]["op_name"]]
                entry[0] += event["dur"]
                entry[1] += 1
        return {op: (us / calls, n / calls) for op, (us, n) in times.items()}


def main(argv):
    del argv
    import transformers

    paths = serving._paths()
    serving.prepare(paths, ["tfbert"])
    export_path = serving._export_of("tfbert", paths)
    sentences = read_dev(FLAGS.latency_sentences)[0]
    text_export = SessionExport(export_path)
    id_export = SessionExport(
        export_path, transformers.AutoTokenizer.from_pretrained(paths["hf"]))
    onnx = OnnxModel(paths)

    id_requests = [id_export.request([s]) for s in sentences]
    onnx_ids = [onnx.ids([s]) for s in sentences]
    text_requests = [text_export.request([s]) for s in sentences]
    # The two models on the same ids must agree before anything is timed.
    for request, inputs in zip(id_requests[:20], onnx_ids[:20]):
        tf_probabilities = id_export(request)["probabilities"]
        logits = onnx.run(inputs)
        onnx_probabilities = np.exp(logits) / np.exp(logits).sum(
            -1, keepdims=True)
        diff = float(np.abs(tf_probabilities - onnx_probabilities).max())
        if diff > 1e-4:
            raise SystemExit(f"the export and the ONNX file disagree ({diff})")

    def replay(fn, requests):
        return lambda: float(np.median(batch1_latencies_ms(
            lambda one: fn(one[0]), requests)))

    measured = {
        "tfbert_text": replay(text_export, text_requests),
        "tfbert_ids": replay(id_export, id_requests),
        "onnx_text": replay(lambda s: onnx.run(onnx.ids([s])), sentences),
        "onnx_ids": replay(onnx.run, onnx_ids),
        "tokenizer": replay(lambda s: onnx.ids([s]), sentences)}
    for measure in measured.values():
        measure()  # warm-up: every length once
    rounds = {name: [] for name in measured}
    for _ in range(FLAGS.rounds):
        for name, measure in measured.items():
            rounds[name].append(measure())
    p50 = {name: float(np.median(values)) for name, values in rounds.items()}

    calls = min(FLAGS.profile_calls, len(sentences))
    tf_split = _split(id_export.op_times(id_requests[:calls]))
    profiled = OnnxModel(paths, profile=True)
    for inputs in onnx_ids[:calls]:
        profiled.run(inputs)
    onnx_split = _split(profiled.op_times(calls))

    rows = [
        ("request, text in: p50 ms", p50["tfbert_text"], p50["onnx_text"]),
        ("model, ids in: p50 ms", p50["tfbert_ids"], p50["onnx_ids"]),
        ("tokenizing (request - model), ms",
         p50["tfbert_text"] - p50["tfbert_ids"],
         p50["onnx_text"] - p50["onnx_ids"]),
        ("profiled matrix-product kernels, ms per call", tf_split[0],
         onnx_split[0]),
        ("profiled other kernels, ms per call", tf_split[1], onnx_split[1]),
        ("kernels per call", tf_split[2], onnx_split[2])]
    print(f"cpu: {serving._cpu_description()}; {FLAGS.rounds} rounds of "
          f"{len(sentences)} batch-1 sentences; tokenizers alone p50 "
          f"{p50['tokenizer']:.2f} ms")
    print("| batch 1 | tfbert export | ONNX Runtime | tfbert / ORT |")
    print("| --- | ---: | ---: | ---: |")
    for label, ours, theirs in rows:
        print(f"| {label} | {ours:.2f} | {theirs:.2f} | "
              f"{ours / theirs:.2f}x |")
    print("per round p50 ms: " + "; ".join(
        f"{name} {', '.join(f'{v:.2f}' for v in values)}"
        for name, values in rounds.items()))
    print(json.dumps({"p50_ms": p50, "rounds": rounds,
                      "tfbert_profile": dict(zip(
                          ("matmul_ms", "other_ms", "kernels"), tf_split)),
                      "onnx_profile": dict(zip(
                          ("matmul_ms", "other_ms", "kernels"), onnx_split))}))


if __name__ == "__main__":
    define_flags()
    app.run(main)
