"""Online-serving latency: tfbert's raw-text exports vs HF transformers vs
ONNX Runtime, all in one process and timed interleaved.

    python -m benchmarks.serving_latency --workdir=runs/serving

The exports, the HF directory and the ONNX file are those of
`benchmarks.serving` (made the same way when missing, in the same
`--workdir`, so every runtime holds the same weights). Every runtime of
`--runtimes` is loaded into this one process and the measurements take
turns, so a change of the machine's load falls on all of them alike:

1. Labels: every runtime's labels on the first `--max_sentences` SST-2
   dev sentences (0 = all 872), compared with HF's and, for the float32
   tfbert variants (XLA, batching), with the plain export's (the run stops
   on a difference); then one untimed batch-1 pass of each (warm-up).
2. `--rounds` rounds; in each, every runtime in turn answers the first
   `--latency_sentences` dev sentences one by one (batch-1 p50, p99) and
   the first `--throughput_sentences` in batches of `--batch_size`
   (sentences/s). Figures are medians over the rounds.
3. Concurrency: for each of `--clients`, that many client threads, each
   sending one sentence at a time and the next as soon as the answer comes
   (closed loop), `--concurrent_requests` requests in all; per runtime the
   p50 and p99 of the requests' latencies and the requests/s. Runtimes take
   turns at each client count.

Prints Markdown tables and one JSON line. Timings on a shared machine: read
the ratios within one run.
"""

import json
import threading
import time

import numpy as np
from absl import app, flags

from benchmarks import serving
from benchmarks.serving import batch1_latencies_ms, read_dev

FLAGS = flags.FLAGS
# The runtime of the plain export behind TensorFlow's batching op.
BATCHING = "tfbert_batching"
# The tfbert runtimes that compute what the plain export computes, in
# float32: their labels must be its labels.
FLOAT32_VARIANTS = ("tfbert_xla", BATCHING)


def define_flags():
    serving.define_flags()
    FLAGS.set_default("runtimes", ["tfbert", "hf", "onnx"])
    FLAGS.set_default("latency_sentences", 100)
    FLAGS.set_default("rounds", 3)
    flags.DEFINE_integer("throughput_sentences", 256,
                         "Dev sentences of the timed batches.")
    flags.DEFINE_list("clients", ["1", "4", "16"],
                      "Concurrent single-sentence clients.")
    flags.DEFINE_integer("concurrent_requests", 192,
                         "Requests per runtime and client count.")
    flags.DEFINE_integer("max_batch_size", 32,
                         f"{BATCHING}: the largest merged batch.")
    flags.DEFINE_integer("batch_timeout_micros", 2000,
                         f"{BATCHING}: how long a batch waits to fill.")
    flags.DEFINE_integer("batch_threads", 1,
                         f"{BATCHING}: batches run at once.")


def _batching_runtime(paths):
    """The plain export's `serving_default` behind TensorFlow's batching
    op (`tf.nondifferentiable_batch_function`, the BatchFunction op TF
    Serving's batching also runs): concurrent calls are merged into one
    batch of up to `--max_batch_size` sentences, waiting at most
    `--batch_timeout_micros` for a batch to fill."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tokenizer ops

    export = serving._export_of("tfbert", paths)
    # Held here: the batched function reads the loaded object's variables.
    loaded = tf.saved_model.load(export)
    with open(f"{export}/assets/labels.txt", encoding="utf-8") as f:
        label_names = f.read().split()

    @tf.nondifferentiable_batch_function(
        num_batch_threads=FLAGS.batch_threads,
        max_batch_size=FLAGS.max_batch_size,
        batch_timeout_micros=FLAGS.batch_timeout_micros)
    def batched(sentence):
        return loaded.signatures["serving_default"](
            sentence=sentence)["probabilities"]

    # Traced once: called eagerly, the decorator makes a new function (and a
    # new batching queue) per call, which neither batches nor serves.
    serve = tf.function(batched,
                        input_signature=[tf.TensorSpec([None], tf.string)])

    def predict(texts):
        probabilities = serve(tf.constant(texts)).numpy()
        return ([label_names[i] for i in probabilities.argmax(-1)],
                probabilities)
    return predict


def _runtimes(paths):
    """name -> predict(texts) -> (labels, probabilities)."""
    runtimes = {}
    for name in FLAGS.runtimes:
        if name == BATCHING:
            runtimes[name] = _batching_runtime(paths)
        elif name in serving.EXPORTS:
            runtimes[name] = serving._tfbert_runtime(paths, name)[0]
        elif name == "hf":
            runtimes[name] = serving._hf_runtime(paths)[0]
        elif name == "onnx":
            runtimes[name] = serving._onnx_runtime(paths)[0]
        else:
            raise app.UsageError(f"--runtimes: unknown runtime {name!r}")
    return runtimes


def _labels(predict, sentences):
    labels = []
    for begin in range(0, len(sentences), FLAGS.batch_size):
        labels += predict(sentences[begin:begin + FLAGS.batch_size])[0]
    return labels


def _throughput(predict, sentences):
    start = time.perf_counter()
    for begin in range(0, len(sentences), FLAGS.batch_size):
        predict(sentences[begin:begin + FLAGS.batch_size])
    return len(sentences) / (time.perf_counter() - start)


def closed_loop(predict, sentences, clients, requests):
    """`clients` threads, each sending one sentence at a time (the next as
    soon as its answer comes), `requests` in all (sentences in turn).

    Returns (latencies in ms, requests/s)."""
    lock = threading.Lock()
    issued = [0]
    latencies = []

    def client():
        while True:
            with lock:
                index = issued[0]
                if index >= requests:
                    return
                issued[0] += 1
            sentence = sentences[index % len(sentences)]
            start = time.perf_counter()
            predict([sentence])
            elapsed = 1000 * (time.perf_counter() - start)
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, requests / (time.perf_counter() - start)


def _check_labels(runtimes, sentences):
    """name -> labels; raises if a float32 tfbert variant's differ from the
    plain export's (bfloat16 ones may move a label: their agreement is
    reported)."""
    labels = {name: _labels(predict, sentences)
              for name, predict in runtimes.items()}
    plain = labels.get("tfbert")
    for name in runtimes:
        if name in FLOAT32_VARIANTS and plain:
            changed = sum(a != b for a, b in zip(labels[name], plain))
            if changed:
                raise RuntimeError(f"{name}: {changed} of {len(plain)} labels "
                                   "differ from the plain export's")
    return labels


def _percentiles(latencies):
    return (float(np.percentile(latencies, 50)),
            float(np.percentile(latencies, 99)))


def main(argv):
    del argv
    paths = serving._paths()
    serving.prepare(paths, [name for name in FLAGS.runtimes
                            if name in serving.EXPORTS])
    if BATCHING in FLAGS.runtimes and "tfbert" not in FLAGS.runtimes:
        raise app.UsageError(f"--runtimes: {BATCHING} needs tfbert")
    sentences, _ = read_dev(FLAGS.max_sentences)
    runtimes = _runtimes(paths)
    labels = _check_labels(runtimes, sentences)
    for predict in runtimes.values():
        # Warm-up: each batch-1 shape once (XLA compiles per bucket).
        batch1_latencies_ms(predict, sentences[:FLAGS.latency_sentences])

    rounds = {name: [] for name in runtimes}
    for _ in range(FLAGS.rounds):
        for name, predict in runtimes.items():
            p50, p99 = _percentiles(batch1_latencies_ms(
                predict, sentences[:FLAGS.latency_sentences]))
            rounds[name].append((p50, p99, _throughput(
                predict, sentences[:FLAGS.throughput_sentences])))
    concurrency = {name: {} for name in runtimes}
    for clients in map(int, FLAGS.clients):
        for name, predict in runtimes.items():
            latencies, rate = closed_loop(predict, sentences, clients,
                                          FLAGS.concurrent_requests)
            concurrency[name][clients] = (*_percentiles(latencies), rate)

    results = {name: dict(zip(("p50_ms", "p99_ms", "sentences_per_s"),
                              np.median(np.array(runs), axis=0).tolist()))
               for name, runs in rounds.items()}
    reference = "onnx" if "onnx" in results else next(iter(results))
    print(f"cpu: {serving._cpu_description()}; {FLAGS.rounds} rounds; "
          f"ratios against {reference}")
    print(f"| runtime | batch-1 p50 ms | batch-1 p99 ms | batch "
          f"{FLAGS.batch_size} sentences/s | per round (p50 ms / sentences/s)"
          " | labels = HF |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    base = results[reference]
    for name, r in results.items():
        agree = (np.mean(np.equal(labels[name], labels["hf"]))
                 if "hf" in labels else float("nan"))
        per_round = ", ".join(f"{p50:.2f} / {rate:.0f}"
                              for p50, _, rate in rounds[name])
        print(f"| {name} | {r['p50_ms']:.2f} "
              f"({r['p50_ms'] / base['p50_ms']:.2f}x) | {r['p99_ms']:.2f} | "
              f"{r['sentences_per_s']:.1f} "
              f"({r['sentences_per_s'] / base['sentences_per_s']:.2f}x) | "
              f"{per_round} | {agree:.4f} |")
    print()
    print("| runtime | " + " | ".join(
        f"{c} clients p50 / p99 ms (req/s)" for c in FLAGS.clients) + " |")
    print("| --- |" + " ---: |" * len(FLAGS.clients))
    for name, levels in concurrency.items():
        print(f"| {name} | " + " | ".join(
            f"{p50:.1f} / {p99:.1f} ({rate:.0f})"
            for p50, p99, rate in levels.values()) + " |")
    print(json.dumps({"rounds": results, "concurrency": {
        name: {str(c): dict(zip(("p50_ms", "p99_ms", "requests_per_s"), v))
               for c, v in levels.items()}
        for name, levels in concurrency.items()}}))


if __name__ == "__main__":
    define_flags()
    app.run(main)
