"""Encoder inference throughput: tfbert (TF graph, with and without XLA)
vs HF transformers BertModel (PyTorch), with the same weights.

    nice -n 5 python -m benchmarks.encoder_inference

Models: all-MiniLM-L6-v2 (real weights) and the BERT-base shape (random
weights written with `write_checkpoint`, loaded by both frameworks). Inputs
are random ids, no padding. Each framework runs in its own subprocess so
its peak resident memory (VmHWM) is its own; the parent prints seq/s and the
ratio tfbert / HF for every setting.

With `--rounds=N` the two frameworks' subprocesses take turns N times (each
going first in turn) and the parent prints the median seq/s of
each and the median of the per-round ratios: on a shared machine HF's own
rate has moved by ~25 % between runs minutes apart, which one round of
each cannot tell from a difference between the frameworks.

With `--matmuls` each worker also times the encoder's dense layers alone
(rows = the largest batch x seq_length; TensorFlow: MatMul + BiasAdd in a
`tf.function` on variable weights, the fused kernel the encoder runs; torch:
`linear`). The parent prints GFLOP/s per shape, their ratio, and each
framework's forward time split into its dense layers' time at those rates
and the rest (attention products, softmax, LayerNorm, transposes, overhead):
how much of the forward ratio the matmul kernels decide.

With `--compare_checkout=PATH` (another tfbert checkout, e.g. a `git
worktree` of an older commit) a third subprocess in each round runs that
checkout's encoder on the same weights and inputs, and the parent prints
this checkout's rate over it and the largest difference of their outputs:
an A/B of a change to the encoder, e.g.

    git worktree add /tmp/before HEAD~1
    python -m benchmarks.encoder_inference --models=minilm --batch_sizes=32 \
        --rounds=5 --noxla --compare_checkout=/tmp/before

`--forward=inference` times the serving path (`tfbert.inference`, what the
exports run) instead of the Keras model's forward, and `--forward=predict`
a classifier's Keras `predict_on_batch` on the encoder (HF's side stays the
encoder alone).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

from absl import app, flags

from benchmarks.common import is_inside, peak_rss_mb

FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_list("models", ["minilm", "base"], "minilm and/or base.")
    flags.DEFINE_list("batch_sizes", ["32", "1"], "Batch sizes to time.")
    flags.DEFINE_integer("seq_length", 128, "Tokens per sequence.")
    flags.DEFINE_float("min_seconds", 8.0,
                       "Time each setting for at least this long (after warm-up).")
    flags.DEFINE_integer("min_iterations", 3, "...and at least this many calls.")
    flags.DEFINE_integer("rounds", 1,
                         "Times each framework's subprocess runs, taking "
                         "turns; medians are reported.")
    flags.DEFINE_enum("forward", "keras", ["keras", "inference", "predict"],
                      "tfbert's forward without XLA: the Keras model's "
                      "(`encoder(x, training=False)`), the serving path's "
                      "(`tfbert.inference.EncoderInference`), or Keras "
                      "`predict_on_batch` of a `BertClassifier` on the "
                      "encoder (a 2-class head drawn from one seed).")
    flags.DEFINE_bool("xla", True, "Also time tfbert with XLA (jit_compile; "
                      "the Keras forward, whatever --forward says).")
    flags.DEFINE_bool("matmuls", False,
                      "Also time the encoder's dense-layer matmuls alone in "
                      "each framework.")
    flags.DEFINE_float("matmul_seconds", 2.0,
                       "With --matmuls: time each shape at least this long.")
    flags.DEFINE_string("compare_checkout", None,
                        "Another tfbert checkout to time against this one "
                        "(its repository root).")
    flags.DEFINE_string("worker", None, "Internal: run one framework's timings.")
    flags.DEFINE_string("checkpoint", None, "Internal: checkpoint directory.")
    flags.DEFINE_string("tfbert_from", None,
                        "Internal: import tfbert from this checkout.")


def _time(fn, min_seconds, min_iterations):
    for _ in range(2):  # warm-up: tracing, XLA compilation, oneDNN kernels
        fn()
    calls, start = 0, time.perf_counter()
    while calls < min_iterations or time.perf_counter() - start < min_seconds:
        fn()
        calls += 1
    return (time.perf_counter() - start) / calls


def _inputs(batch, seq_length, vocab_size):
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, vocab_size, size=(batch, seq_length))
    ids[:, 0], ids[:, -1] = 101, 102
    types = np.zeros_like(ids)
    types[:, seq_length // 2:] = 1
    return ids.astype("int32"), np.ones_like(ids, "int32"), types.astype("int32")


def _dense_shapes(config):
    """(in, out, count per layer) of the encoder's dense layers: query, key,
    value and output projections, feed-forward in and out."""
    hidden, inner = config.hidden_size, config.intermediate_size
    return [(hidden, hidden, 4), (hidden, inner, 1), (inner, hidden, 1)]


def _dense_milliseconds(config, rows, rates):
    """The time a forward pass over `rows` tokens spends in dense layers at
    the measured `rates` (shape -> GFLOP/s)."""
    return 1e3 * config.num_layers * sum(
        count * 2 * rows * n_in * n_out / (rates[f"{n_in}x{n_out}"] * 1e9)
        for n_in, n_out, count in _dense_shapes(config))


def _matmul_gflops(dense, rows, n_in, n_out):
    """GFLOP/s of `dense()`, a [rows, n_in] x [n_in, n_out] product plus
    bias."""
    seconds = _time(dense, FLAGS.matmul_seconds, FLAGS.min_iterations)
    return 2 * rows * n_in * n_out / seconds / 1e9


def _tf_matmul_rates(config, rows):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    rates = {}
    for n_in, n_out, _ in _dense_shapes(config):
        x = tf.constant(rng.normal(size=(rows, n_in)).astype("float32"))
        kernel = tf.Variable(
            rng.normal(0, 0.02, (n_in, n_out)).astype("float32"))
        bias = tf.Variable(np.zeros(n_out, "float32"))
        # Called without .numpy(), like torch's below: no copy of the output.
        dense = tf.function(
            lambda x=x, kernel=kernel, bias=bias: tf.nn.bias_add(
                tf.matmul(x, kernel), bias))
        rates[f"{n_in}x{n_out}"] = _matmul_gflops(dense, rows, n_in, n_out)
    return rates


def _torch_matmul_rates(config, rows):
    import torch

    generator = torch.Generator().manual_seed(0)
    rates = {}
    with torch.inference_mode():
        for n_in, n_out, _ in _dense_shapes(config):
            x = torch.randn(rows, n_in, generator=generator)
            weight = torch.randn(n_out, n_in, generator=generator) * 0.02
            bias = torch.zeros(n_out)
            rates[f"{n_in}x{n_out}"] = _matmul_gflops(
                lambda x=x, weight=weight, bias=bias:
                torch.nn.functional.linear(x, weight, bias),
                rows, n_in, n_out)
    return rates


def _tf_worker(checkpoint, batch_sizes, seq_length):
    import tensorflow as tf

    if FLAGS.tfbert_from:
        sys.path.insert(0, FLAGS.tfbert_from)
    import tfbert
    from tfbert.models import BertEncoder

    encoder = BertEncoder.from_pretrained(checkpoint)
    results, extra = {}, {"tfbert": os.path.dirname(tfbert.__file__)}
    for jit in (False, True) if FLAGS.xla else (False,):
        if FLAGS.forward == "predict" and not jit:
            forward = _predict_forward(encoder)
        else:
            forward = tf.function(
                _inference_forward(encoder)
                if FLAGS.forward == "inference" and not jit
                else lambda x: encoder(x, training=False)["sequence_output"],
                jit_compile=jit)
        for batch in batch_sizes:
            ids, mask, types = _inputs(batch, seq_length,
                                       encoder.config.vocab_size)
            x = {"input_word_ids": tf.constant(ids),
                 "input_mask": tf.constant(mask),
                 "input_type_ids": tf.constant(types)}
            seconds = _time(lambda: forward(x).numpy(), FLAGS.min_seconds,
                            FLAGS.min_iterations)
            results[f"tfbert{'_xla' if jit else ''}/{batch}"] = batch / seconds
            if not jit:
                extra[f"output/{batch}"] = forward(x).numpy()[0].tolist()
    return results, extra, encoder.config


def _inference_forward(encoder):
    """`sequence_output` of the encoder's serving path: `tfbert.inference`,
    or in a `--compare_checkout` from before that package the encoder's
    own `inference_sequence_output`, the same computation."""
    try:
        from tfbert.inference import EncoderInference
    except ImportError:
        return encoder.inference_sequence_output
    inference = EncoderInference(encoder)
    return lambda x: inference(x)["sequence_output"]


def _predict_forward(encoder):
    """Logits of `BertClassifier(encoder, 2).predict_on_batch` (the head
    drawn from seed 0), as an object with `.numpy()` like a tensor's."""
    import keras
    import numpy as np

    from tfbert import BertClassifier

    keras.utils.set_random_seed(0)
    classifier = BertClassifier(encoder, 2)
    return lambda x: SimpleNamespace(
        numpy=lambda: np.asarray(classifier.predict_on_batch(x)))


def _torch_worker(checkpoint, batch_sizes, seq_length):
    import torch
    import transformers

    model = transformers.BertModel.from_pretrained(checkpoint).eval()
    results = {}
    for batch in batch_sizes:
        ids, mask, types = (torch.tensor(a, dtype=torch.long) for a in
                            _inputs(batch, seq_length, model.config.vocab_size))

        def forward():
            with torch.inference_mode():
                return model(input_ids=ids, attention_mask=mask,
                             token_type_ids=types).last_hidden_state.numpy()

        results[f"hf_torch/{batch}"] = batch / _time(
            forward, FLAGS.min_seconds, FLAGS.min_iterations)
    config = SimpleNamespace(hidden_size=model.config.hidden_size,
                             intermediate_size=model.config.intermediate_size,
                             num_layers=model.config.num_hidden_layers)
    return results, {}, config


def _worker(framework):
    """Times one framework and prints its results as JSON. Each framework's
    worker returns (seq/s per setting, extra outputs, a config with the
    encoder's hidden_size, intermediate_size and num_layers)."""
    batch_sizes = [int(b) for b in FLAGS.batch_sizes]
    run, matmul_rates = ((_tf_worker, _tf_matmul_rates) if framework == "tf"
                         else (_torch_worker, _torch_matmul_rates))
    results, extra, config = run(FLAGS.checkpoint, batch_sizes,
                                 FLAGS.seq_length)
    if FLAGS.matmuls:
        rows = max(batch_sizes) * FLAGS.seq_length
        rates = matmul_rates(config, rows)
        extra.update(matmul_gflops=rates,
                     dense_ms=_dense_milliseconds(config, rows, rates))
    print(json.dumps({"seq_per_s": results, "peak_rss_mb": peak_rss_mb(),
                      **extra}))


def _checkpoint(model, workdir):
    """A checkpoint directory both frameworks read."""
    if model == "minilm":
        from tfbert.presets import get_preset

        return str(get_preset("minilm-l6-h384-uncased").directory())
    import numpy as np

    from tfbert.checkpoints import write_checkpoint
    from tfbert.presets import get_preset

    config = get_preset("bert-base-uncased").config
    # Random weights in the shapes of BERT-base; no encoder is built here so
    # this parent process stays small.
    rng = np.random.default_rng(0)
    shapes = {
        "bert/embeddings/word_embeddings": (config.vocab_size, 768),
        "bert/embeddings/position_embeddings": (512, 768),
        "bert/embeddings/token_type_embeddings": (2, 768),
        "bert/embeddings/LayerNorm/gamma": (768,),
        "bert/embeddings/LayerNorm/beta": (768,),
        "bert/pooler/dense/kernel": (768, 768),
        "bert/pooler/dense/bias": (768,),
    }
    for i in range(config.num_layers):
        p = f"bert/encoder/layer_{i}/"
        for name, shape in (("attention/self/query", (768, 768)),
                            ("attention/self/key", (768, 768)),
                            ("attention/self/value", (768, 768)),
                            ("attention/output/dense", (768, 768)),
                            ("intermediate/dense", (768, 3072)),
                            ("output/dense", (3072, 768))):
            shapes[p + name + "/kernel"] = shape
            shapes[p + name + "/bias"] = (shape[1],)
        for name in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes[p + name + "/gamma"] = (768,)
            shapes[p + name + "/beta"] = (768,)
    weights = {name: rng.normal(0, 0.02, shape).astype("float32")
               for name, shape in shapes.items()}
    for name in weights:
        if name.endswith("/gamma"):
            weights[name] += 1.0
    directory = os.path.join(workdir, "bert_base")
    write_checkpoint(directory, config, weights, format="hf")
    return directory


def _spawn(run, checkpoint):
    """Runs one worker: "torch", "tf" (this checkout's tfbert) or "other"
    (`--compare_checkout`'s)."""
    args = [sys.executable, "-m", "benchmarks.encoder_inference",
            f"--worker={'torch' if run == 'torch' else 'tf'}",
            f"--checkpoint={checkpoint}",
            f"--batch_sizes={','.join(FLAGS.batch_sizes)}",
            f"--seq_length={FLAGS.seq_length}",
            f"--min_seconds={FLAGS.min_seconds}",
            f"--min_iterations={FLAGS.min_iterations}",
            f"--{'' if FLAGS.xla else 'no'}xla",
            f"--forward={FLAGS.forward}",
            # The other checkout runs the same kernels: its rates add nothing.
            f"--{'' if FLAGS.matmuls and run != 'other' else 'no'}matmuls",
            f"--matmul_seconds={FLAGS.matmul_seconds}"]
    if run == "other":
        args.append(f"--tfbert_from={FLAGS.compare_checkout}")
    result = subprocess.run(args, capture_output=True, text=True, check=False)
    if result.returncode:
        raise RuntimeError(f"{run} worker failed:\n{result.stderr[-3000:]}")
    output = json.loads(result.stdout.strip().splitlines()[-1])
    if run == "other" and not is_inside(output["tfbert"],
                                      FLAGS.compare_checkout):
        raise RuntimeError(f"--compare_checkout={FLAGS.compare_checkout}: "
                           f"the worker imported tfbert from "
                           f"{output['tfbert']}")
    return output


def main(argv):
    del argv
    if FLAGS.worker:
        _worker(FLAGS.worker)
        return
    print(f"cpus={os.cpu_count()} load={os.getloadavg()} "
          f"seq_length={FLAGS.seq_length}")
    with tempfile.TemporaryDirectory() as workdir:
        for model in FLAGS.models:
            checkpoint = _checkpoint(model, workdir)
            names = ["torch", "tf"] + (["other"] if FLAGS.compare_checkout
                                       else [])
            runs = {name: [] for name in names}
            for round_index in range(FLAGS.rounds):
                # Each run goes first in turn.
                shift = round_index % len(names)
                for name in names[shift:] + names[:shift]:
                    runs[name].append(_spawn(name, checkpoint))
            print(f"\n== {model} ==  peak RSS: tfbert "
                  f"{max(r['peak_rss_mb'] for r in runs['tf']):.0f} MB, "
                  "HF torch "
                  f"{max(r['peak_rss_mb'] for r in runs['torch']):.0f} MB"
                  + (f"; medians of {FLAGS.rounds} rounds"
                     if FLAGS.rounds > 1 else ""))
            for batch in FLAGS.batch_sizes:
                hf = [r["seq_per_s"][f"hf_torch/{batch}"]
                      for r in runs["torch"]]
                line = f"batch {batch:>3}: HF torch {_median(hf):8.2f} seq/s"
                for name in ("tfbert", "tfbert_xla")[:1 + FLAGS.xla]:
                    ours = [r["seq_per_s"][f"{name}/{batch}"]
                            for r in runs["tf"]]
                    ratios = [a / b for a, b in zip(ours, hf)]
                    line += (f" | {name} {_median(ours):8.2f} seq/s "
                             f"({_median(ratios):.2f}x)")
                    if FLAGS.rounds > 1:
                        line += (" per round " + "/".join(
                            f"{ratio:.2f}" for ratio in ratios))
                print(line, flush=True)
                if FLAGS.compare_checkout:
                    print("           " + _comparison(runs, batch), flush=True)
            if FLAGS.matmuls:
                print(_matmul_comparison(runs), flush=True)


def _comparison(runs, batch):
    """This checkout's tfbert against `--compare_checkout`'s, one batch."""
    import numpy as np

    ours, theirs = ([r["seq_per_s"][f"tfbert/{batch}"] for r in runs[name]]
                    for name in ("tf", "other"))
    ratios = [a / b for a, b in zip(ours, theirs)]
    difference = max(
        float(np.max(np.abs(np.subtract(a[f"output/{batch}"],
                                        b[f"output/{batch}"]))))
        for a, b in zip(runs["tf"], runs["other"]))
    return (f"this checkout {_median(ours):.2f} seq/s vs "
            f"{FLAGS.compare_checkout} {_median(theirs):.2f} seq/s: "
            f"{_median(ratios):.3f}x (per round "
            + "/".join(f"{r:.3f}" for r in ratios)
            + f"), outputs differ by at most {difference:.1e}")


def _matmul_comparison(runs):
    """Per dense shape: each framework's median GFLOP/s and the median of
    the per-round ratios."""
    rows = max(int(b) for b in FLAGS.batch_sizes) * FLAGS.seq_length
    lines = [f"dense matmuls alone, {rows} rows (GFLOP/s):"]
    for shape in runs["tf"][0]["matmul_gflops"]:
        ours, hf = ([r["matmul_gflops"][shape] for r in runs[name]]
                    for name in ("tf", "torch"))
        ratios = [a / b for a, b in zip(ours, hf)]
        lines.append(f"  {shape:>10}: tfbert (TF) {_median(ours):6.1f} | "
                     f"torch {_median(hf):6.1f} | {_median(ratios):.2f}x")
    batch = max(int(b) for b in FLAGS.batch_sizes)
    for name, label, key in (("tf", "tfbert", "tfbert"),
                             ("torch", "HF torch", "hf_torch")):
        forward = _median([1e3 * batch / r["seq_per_s"][f"{key}/{batch}"]
                           for r in runs[name]])
        dense = _median([r["dense_ms"] for r in runs[name]])
        lines.append(f"  batch-{batch} forward, {label}: {forward:.0f} ms, "
                     f"of which ~{dense:.0f} ms in dense layers at these "
                     f"rates, ~{forward - dense:.0f} ms in everything else")
    return "\n".join(lines)


def _median(values):
    values = sorted(values)
    middle = len(values) // 2
    return (values[middle] if len(values) % 2
            else (values[middle - 1] + values[middle]) / 2)


if __name__ == "__main__":
    define_flags()
    app.run(main)
