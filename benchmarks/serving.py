"""Serving speed: tfbert's raw-text SavedModel vs HF transformers vs ONNX
Runtime, raw SST-2 sentences in, labels out.

    python -m benchmarks.serving --workdir=runs/serving

1. Export (skipped when `--workdir`/export already holds a version):
   `python -m tasks.glue --task=sst2` fine-tunes minilm-l6-h384-uncased on
   the first `--train_examples` SST-2 training rows for one epoch and writes
   the raw-text classifier SavedModel with the current export code; the
   same model directory is exported again with `--export_precision=bfloat16`
   into `--workdir`/export_bfloat16 (runtime `tfbert_bf16`) and, adding
   `--export_constant_kernels`, into `--workdir`/export_bfloat16_constant
   (runtime `tfbert_bf16_ck`); with `--export_xla` into
   `--workdir`/export_xla (runtime `tfbert_xla`).
2. Convert (its own process, imports tfbert): every weight of that export
   (encoder and classification head, read from the SavedModel's variables)
   goes into an HF `BertForSequenceClassification` directory with the
   checkpoint's tokenizer files, and from there into an ONNX file
   (`torch.onnx.export`). All three runtimes therefore hold the same weights.
3. Measure: each runtime in its own fresh process, one after the other, on the
   same dev sentences in file order:
   - tfbert, tfbert_bf16, tfbert_bf16_ck, tfbert_xla: `tf.saved_model.load` +
     `serving_default`
     (strings in) in a process that imports only tensorflow and
     tensorflow_text;
   - HF: fast tokenizer (padding to the batch's longest, truncation at
     `--max_seq_length`) + `BertForSequenceClassification` under
     `torch.inference_mode()`;
   - ONNX Runtime: the same fast tokenizer (the `tokenizers` library, padding
     to the batch's longest) + an `InferenceSession` on the ONNX file.
   Each answers with the label name and the class probabilities per
   sentence; runtimes are compared on the argmax class ids.

With `--rounds=N` the runtimes are measured N times, interleaved (round 1:
every runtime, round 2: every runtime, ...), and each figure is the median
over the rounds: on a shared machine the load changes between processes.

TensorFlow uses oneDNN (fused MatMul + BiasAdd + GELU kernels) by itself
only on CPUs with AVX512_VNNI, AVX512_BF16 or AMX; elsewhere (an AVX2-only
CPU) its Eigen kernels run unless TF_ENABLE_ONEDNN_OPTS=1. `--onednn=on|off`
sets that variable for the tfbert runtimes (TF Serving reads it too); the
output names the CPU and the setting the runtimes ran with.

Reported per runtime: sentences/s at batch `--batch_size` over the dev
sentences, p50/p99 latency at batch 1 over the first `--latency_sentences`
(the first time the runtime sees each of their lengths at batch 1) and the
p50 of a second pass over the same sentences (every length seen before:
TensorFlow's oneDNN kernels set up their work per input shape, so this is
what a server settles at), cold start (process start -> imports -> load ->
first answered batch), peak RSS (the process's VmHWM) and peak private memory (RssAnon, sampled by
the parent), the size of what the runtime loads from disk, dev accuracy, and
agreement with HF's labels (plus the max abs difference of probabilities).
Ratios are against HF. Prints a Markdown table and one JSON line.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np
from absl import app, flags

from benchmarks.common import peak_rss_mb, run_sampling_private_memory

FLAGS = flags.FLAGS

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLUE_DATA = os.path.join(REPO_ROOT, "..", "shared", "data", "glue")
PRESET = "minilm-l6-h384-uncased"
# The task CLI that trains and exports the classifier.
GLUE_TASK = "tfbert_cli.glue"
# tfbert runtime -> (the directory under --workdir of the export it serves,
# the export's flags beyond the float32 default).
EXPORTS = {
    "tfbert": ("export", []),
    "tfbert_bf16": ("export_bfloat16", ["--export_precision=bfloat16"]),
    "tfbert_bf16_ck": ("export_bfloat16_constant",
                       ["--export_precision=bfloat16",
                        "--export_constant_kernels"]),
    "tfbert_xla": ("export_xla", ["--export_xla"])}
RUNTIMES = (*EXPORTS, "hf", "onnx")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt",
                   "special_tokens_map.json")


def define_flags():
    flags.DEFINE_string("workdir", "runs/serving",
                        "Export, converted models and results.")
    flags.DEFINE_integer("train_examples", 320,
                         "SST-2 training rows the exported classifier is "
                         "fine-tuned on (one epoch).")
    flags.DEFINE_integer("max_sentences", 0,
                         "Dev sentences (file order) for the throughput pass "
                         "and the label comparison; 0 = all 872.")
    flags.DEFINE_integer("batch_size", 32, "Batch size of the throughput pass.")
    flags.DEFINE_integer("latency_sentences", 200,
                         "Sentences sent one by one for the batch-1 latency.")
    flags.DEFINE_integer("max_seq_length", 128,
                         "Truncation length (the export's max_seq_length).")
    flags.DEFINE_list("runtimes", list(RUNTIMES), "Runtimes to measure.")
    flags.DEFINE_integer("rounds", 1,
                         "Interleaved measurements of every runtime; the "
                         "table shows medians over the rounds.")
    flags.DEFINE_integer("threads", 0,
                         "Intra-op threads of every runtime (TF also "
                         "inter-op); 0 = each runtime's default.")
    flags.DEFINE_enum("onednn", "default", ("default", "on", "off"),
                      "TensorFlow's oneDNN kernels and fusions in the tfbert "
                      "runtimes (TF_ENABLE_ONEDNN_OPTS): TensorFlow turns "
                      "them on by itself only on CPUs with AVX512_VNNI, "
                      "AVX512_BF16 or AMX.")
    flags.DEFINE_enum("worker", None, ("convert",) + RUNTIMES,
                      "Internal: run one stage in this process.")
    flags.DEFINE_float("started_at", None,
                       "Internal: the parent's clock when it spawned this "
                       "worker (for the cold start).")


def _paths():
    workdir = os.path.abspath(FLAGS.workdir)
    return {**{runtime: os.path.join(workdir, directory)
               for runtime, (directory, _) in EXPORTS.items()},
            "model_dir": os.path.join(workdir, "model"),
            "hf": os.path.join(workdir, "hf"),
            "onnx": os.path.join(workdir, "model.onnx")}


def _latest_version(export_root):
    versions = [int(name) for name in os.listdir(export_root) if name.isdigit()]
    if not versions:
        raise FileNotFoundError(f"no SavedModel version under {export_root}")
    return os.path.join(export_root, str(max(versions)))


def read_dev(limit=0):
    """SST-2 dev sentences and their class ids (file order), first `limit`
    (0 = all)."""
    path = os.path.join(GLUE_DATA, "SST-2", "dev.tsv")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    rows = rows[:limit] if limit else rows
    return [sentence for sentence, _ in rows], [int(label) for _, label in rows]


def _size_mb(paths):
    total = 0
    for path in paths:
        if os.path.isdir(path):
            total += sum(os.path.getsize(os.path.join(root, name))
                         for root, _, names in os.walk(path) for name in names)
        else:
            total += os.path.getsize(path)
    return total / 2**20


# --- Stage 1 and 2: export and conversion ----------------------------------

def _has_version(directory):
    return os.path.isdir(directory) and any(
        name.isdigit() for name in os.listdir(directory))


def _export(paths, runtimes):
    command = [sys.executable, "-m", GLUE_TASK, "--task=sst2",
               f"--data_dir={GLUE_DATA}", f"--init_checkpoint={PRESET}",
               f"--model_dir={paths['model_dir']}",
               f"--max_train_examples={FLAGS.train_examples}",
               "--num_train_epochs=1",
               f"--max_seq_length={FLAGS.max_seq_length}"]
    # The float32 export first: it trains.
    for runtime in sorted(set(runtimes) | {"tfbert"},
                          key=list(EXPORTS).index):
        export_flags = EXPORTS[runtime][1]
        if not _has_version(paths[runtime]):
            # The float32 export trains; the others export the same trained
            # weights again.
            subprocess.run(
                command + [f"--export_dir={paths[runtime]}"] + export_flags
                + (["--do_train"] if runtime == "tfbert" else []),
                check=True)


def prepare(paths, runtimes):
    """Makes what is missing of the exports of the tfbert `runtimes` (the
    float32 one always) and of the HF and ONNX conversion."""
    os.makedirs(os.path.dirname(paths["onnx"]), exist_ok=True)
    _export(paths, runtimes)
    if not os.path.exists(paths["onnx"]):
        _spawn("convert")


def _export_of(runtime, paths):
    """The version directory a tfbert runtime serves."""
    return _latest_version(paths[runtime])


def _convert_worker(paths):
    """Writes the HF directory and the ONNX file from the export's weights."""
    import shutil

    import tensorflow as tf
    import torch
    import transformers

    from tfbert.checkpoints import write_checkpoint
    from tfbert.checkpoints.variable_map import encoder_variables, read_variables
    from tfbert.export.serving_module import exported_weights
    from tfbert.models import BertClassifier, BertEncoder
    from tfbert.presets import get_preset

    encoder = BertEncoder.from_pretrained(PRESET)
    model = BertClassifier(encoder, num_classes=2)
    reader = tf.train.load_checkpoint(os.path.join(
        _latest_version(paths["tfbert"]), "variables", "variables"))
    for variable, value in zip(model.variables, exported_weights(model, reader)):
        variable.assign(value)

    # A conversion that stopped before the ONNX file (the step that marks it
    # done) left a partial HF directory: it is derived data, so start over.
    shutil.rmtree(paths["hf"], ignore_errors=True)
    write_checkpoint(paths["hf"], encoder.config,
                     read_variables(encoder_variables(encoder)), format="hf")
    hf_model = transformers.BertForSequenceClassification.from_pretrained(
        paths["hf"], num_labels=2, id2label=_export_label_names(paths))
    with torch.no_grad():
        hf_model.classifier.weight.copy_(
            torch.from_numpy(np.asarray(model.head.dense.kernel).T))
        hf_model.classifier.bias.copy_(
            torch.from_numpy(np.asarray(model.head.dense.bias)))
    hf_model.save_pretrained(paths["hf"])
    source = str(get_preset(PRESET).directory())
    for name in TOKENIZER_FILES:
        shutil.copy(os.path.join(source, name), paths["hf"])

    hf_model.eval()
    example = transformers.AutoTokenizer.from_pretrained(paths["hf"])(
        ["a first sentence", "and a second"], padding=True, return_tensors="pt")
    names = ("input_ids", "attention_mask", "token_type_ids")
    torch.onnx.export(
        hf_model, tuple(example[name] for name in names), paths["onnx"],
        input_names=list(names), output_names=["logits"],
        dynamic_axes={**{name: {0: "batch", 1: "sequence"} for name in names},
                      "logits": {0: "batch"}},
        opset_version=17, dynamo=False)


def _export_label_names(paths):
    """{class id: label name} as the export answers on the dev sentences."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tokenizer ops

    serve = tf.saved_model.load(
        _latest_version(paths["tfbert"])).signatures["serving_default"]
    sentences = read_dev()[0]
    names = {}
    # In requests of at most the export's default bound on examples.
    for begin in range(0, len(sentences), 64):
        outputs = serve(sentence=tf.constant(sentences[begin:begin + 64]))
        names.update(zip(outputs["probabilities"].numpy().argmax(-1).tolist(),
                         [label.decode() for label in outputs["label"].numpy()]))
    if sorted(names) != [0, 1]:
        raise RuntimeError(f"the export predicted only the classes {names}")
    return names


# --- Stage 3: one runtime per process --------------------------------------

def _tfbert_runtime(paths, runtime="tfbert"):
    """`predict(texts) -> (labels, probabilities)` of the raw-text export."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tokenizer ops

    if FLAGS.threads:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
        tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    export = _export_of(runtime, paths)
    serve = tf.saved_model.load(export).signatures["serving_default"]

    def predict(texts):
        outputs = serve(sentence=tf.constant(texts))
        return ([label.decode() for label in outputs["label"].numpy()],
                outputs["probabilities"].numpy())
    return predict, [export]


def batch1_latencies_ms(predict, sentences):
    """Milliseconds `predict` takes for each of `sentences`, sent alone."""
    latencies = []
    for sentence in sentences:
        start = time.perf_counter()
        predict([sentence])
        latencies.append(1000 * (time.perf_counter() - start))
    return latencies


def onednn_enabled():
    """Whether this process's TensorFlow runs oneDNN (TF has no public API
    for it; this is what its startup log line reads)."""
    from tensorflow.python.util import _pywrap_util_port

    return bool(_pywrap_util_port.IsMklEnabled())


def _cpu_description():
    """The CPU model and whether it has the bfloat16 instructions the
    bfloat16 export needs (Linux /proc/cpuinfo)."""
    model, cpu_flags = "unknown CPU", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                cpu_flags = set(value.split())
                break
    found = [name for name in ("avx512f", "avx512_bf16", "amx_bf16")
             if name in cpu_flags]
    return f"{model}, {os.cpu_count()} cores, " + (
        " ".join(found) if found else "no AVX-512")


def _hf_runtime(paths):
    import torch
    import transformers

    if FLAGS.threads:
        torch.set_num_threads(FLAGS.threads)
    tokenizer = transformers.AutoTokenizer.from_pretrained(paths["hf"])
    model = transformers.BertForSequenceClassification.from_pretrained(
        paths["hf"]).eval()

    def predict(texts):
        with torch.inference_mode():
            inputs = tokenizer(texts, padding=True, truncation=True,
                               max_length=FLAGS.max_seq_length,
                               return_tensors="pt")
            probabilities = torch.softmax(model(**inputs).logits, -1).numpy()
        return ([model.config.id2label[i] for i in probabilities.argmax(-1)],
                probabilities)
    return predict, [paths["hf"]]


def _onnx_runtime(paths):
    import onnxruntime
    import tokenizers

    tokenizer = tokenizers.Tokenizer.from_file(
        os.path.join(paths["hf"], "tokenizer.json"))
    tokenizer.enable_truncation(FLAGS.max_seq_length)
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"),
                             pad_token="[PAD]")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = FLAGS.threads
    session = onnxruntime.InferenceSession(
        paths["onnx"], options, providers=["CPUExecutionProvider"])
    with open(os.path.join(paths["hf"], "config.json")) as f:
        id2label = json.load(f)["id2label"]  # written by the conversion

    def predict(texts):
        encodings = tokenizer.encode_batch(texts)
        inputs = {name: np.array([getattr(e, attribute) for e in encodings],
                                 np.int64)
                  for name, attribute in (("input_ids", "ids"),
                                          ("attention_mask", "attention_mask"),
                                          ("token_type_ids", "type_ids"))}
        logits = session.run(["logits"], inputs)[0]
        shifted = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities = shifted / shifted.sum(-1, keepdims=True)
        return ([id2label[str(i)] for i in probabilities.argmax(-1)],
                probabilities)
    return predict, [paths["onnx"], os.path.join(paths["hf"], "tokenizer.json")]


def _runtime_worker(name, paths):
    """Cold start, then the throughput pass, then batch-1 latency; prints one
    JSON line."""
    sentences, _ = read_dev(FLAGS.max_sentences)
    if name in EXPORTS:
        predict, files = _tfbert_runtime(paths, name)
    else:
        predict, files = {"hf": _hf_runtime,
                          "onnx": _onnx_runtime}[name](paths)
    predict(sentences[:FLAGS.batch_size])
    cold_start = time.time() - FLAGS.started_at

    probabilities = []
    start = time.perf_counter()
    for begin in range(0, len(sentences), FLAGS.batch_size):
        probabilities.append(
            predict(sentences[begin:begin + FLAGS.batch_size])[1])
    throughput = len(sentences) / (time.perf_counter() - start)

    latencies = batch1_latencies_ms(predict,
                                    sentences[:FLAGS.latency_sentences])
    repeated = batch1_latencies_ms(predict,
                                   sentences[:FLAGS.latency_sentences])
    print(json.dumps({
        "runtime": name, "cold_start_s": cold_start,
        "sentences_per_s": throughput,
        "p50_ms": float(np.percentile(latencies, 50)),
        "p99_ms": float(np.percentile(latencies, 99)),
        "p50_repeat_ms": float(np.percentile(repeated, 50)),
        "peak_rss_mb": peak_rss_mb(), "size_mb": _size_mb(files),
        "imports_tfbert": "tfbert" in sys.modules,
        "onednn": onednn_enabled() if name in EXPORTS else None,
        "class_ids": np.concatenate(probabilities).argmax(-1).tolist(),
        "probabilities": np.concatenate(probabilities).tolist()}))


# --- Parent: spawn, compare, print -----------------------------------------

def _spawn(worker):
    """Runs `worker` in a fresh process; returns its stdout and its peak
    private memory (MB)."""
    args = [sys.executable, "-m", "benchmarks.serving", f"--worker={worker}",
            f"--workdir={FLAGS.workdir}",
            f"--max_sentences={FLAGS.max_sentences}",
            f"--batch_size={FLAGS.batch_size}",
            f"--latency_sentences={FLAGS.latency_sentences}",
            f"--max_seq_length={FLAGS.max_seq_length}",
            f"--threads={FLAGS.threads}", f"--started_at={time.time()}"]
    env = dict(os.environ)
    if FLAGS.onednn != "default" and worker in EXPORTS:
        env["TF_ENABLE_ONEDNN_OPTS"] = "1" if FLAGS.onednn == "on" else "0"
    returncode, stdout, stderr, private_mb = run_sampling_private_memory(
        args, period_s=0.05, env=env)
    if returncode:
        raise RuntimeError(f"worker {worker} failed:\n{stderr[-3000:]}")
    return stdout, private_mb


def _measure(runtime):
    stdout, private_mb = _spawn(runtime)
    return {**json.loads(stdout.strip().splitlines()[-1]),
            "peak_private_mb": private_mb}


def _median_result(runs):
    """The first round's answers with every timing and memory figure
    replaced by its median over the rounds."""
    result = dict(runs[0])
    for key in ("cold_start_s", "sentences_per_s", "p50_ms", "p99_ms",
                "p50_repeat_ms", "peak_rss_mb", "peak_private_mb"):
        result[key] = float(np.median([r[key] for r in runs]))
    return result


def _ratio(value, reference):
    return f"{value:,.1f} ({value / reference:.2f}x)"


def _table(results, gold):
    hf = results["hf"]
    rows = [f"| runtime | sentences/s, batch {FLAGS.batch_size} | "
            "p50 ms, batch 1 | p50 ms, batch 1, second pass | "
            "p99 ms, batch 1 | cold start s | peak RSS MB | peak private MB | "
            "size MB | dev accuracy | labels = HF | max abs prob diff vs HF |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
            "---: | ---: | ---: |"]
    for name, r in results.items():
        diff = np.abs(np.array(r["probabilities"])
                      - np.array(hf["probabilities"])).max()
        rows.append(
            f"| {name} | {_ratio(r['sentences_per_s'], hf['sentences_per_s'])}"
            f" | {_ratio(r['p50_ms'], hf['p50_ms'])} | "
            f"{_ratio(r['p50_repeat_ms'], hf['p50_repeat_ms'])} | "
            f"{r['p99_ms']:.1f} | "
            f"{_ratio(r['cold_start_s'], hf['cold_start_s'])} | "
            f"{r['peak_rss_mb']:,.0f} | {r['peak_private_mb']:,.0f} | "
            f"{r['size_mb']:,.1f} | "
            f"{np.mean(np.equal(r['class_ids'], gold)):.4f} | "
            f"{np.mean(np.equal(r['class_ids'], hf['class_ids'])):.4f} | "
            f"{diff:.1e} |")
    return "\n".join(rows)


def main(argv):
    del argv
    paths = _paths()
    if FLAGS.worker == "convert":
        _convert_worker(paths)
        return
    if FLAGS.worker:
        _runtime_worker(FLAGS.worker, paths)
        return
    if "hf" not in FLAGS.runtimes:
        raise app.UsageError("--runtimes needs hf: the ratios are against it")
    prepare(paths, list(EXPORTS))
    _, gold = read_dev(FLAGS.max_sentences)
    rounds = {name: [] for name in FLAGS.runtimes}
    loads = [os.getloadavg()]
    for round_index in range(FLAGS.rounds):
        for name in FLAGS.runtimes:
            rounds[name].append(_measure(name))
            loads.append(os.getloadavg())
            r = rounds[name][-1]
            print(f"round {round_index + 1} {name}: "
                  f"{r['sentences_per_s']:.1f} sentences/s, "
                  f"p50 {r['p50_ms']:.1f} ms, second pass "
                  f"{r['p50_repeat_ms']:.1f} ms", flush=True)
    if any(r["imports_tfbert"] for runs in rounds.values() for r in runs):
        raise RuntimeError("a runtime process imported tfbert")
    results = {name: _median_result(runs) for name, runs in rounds.items()}
    onednn = {r["onednn"] for runs in rounds.values() for r in runs} - {None}
    print(f"cpu: {_cpu_description()}; TensorFlow oneDNN: "
          + "/".join("on" if on else "off" for on in sorted(onednn))
          + f" (--onednn={FLAGS.onednn})")
    print("load averages (1 min) before and after each runtime: "
          f"{[round(load[0], 2) for load in loads]}")
    if FLAGS.rounds > 1:
        print("per round (sentences/s, p50 ms, second-pass p50 ms): "
              + json.dumps({name: [(round(r["sentences_per_s"], 1),
                                    round(r["p50_ms"], 1),
                                    round(r["p50_repeat_ms"], 1))
                                   for r in runs]
                            for name, runs in rounds.items()}))
    print(_table(results, np.array(gold)))
    for name in results:
        if name in EXPORTS:
            print(f"{name}: batch {FLAGS.batch_size} " + ", ".join(
                f"{results[name]['sentences_per_s'] / results[other]['sentences_per_s']:.2f}x {other}"
                for other in results if other != name)
                + "; batch-1 p50 " + ", ".join(
                f"{results[name]['p50_ms'] / results[other]['p50_ms']:.2f}x {other}'s"
                for other in results if other != name)
                + "; second pass " + ", ".join(
                f"{results[name]['p50_repeat_ms'] / results[other]['p50_repeat_ms']:.2f}x {other}'s"
                for other in results if other != name))
    print(json.dumps({name: {k: v for k, v in r.items()
                             if k not in ("class_ids", "probabilities")}
                      for name, r in results.items()}))


if __name__ == "__main__":
    define_flags()
    app.run(main)
