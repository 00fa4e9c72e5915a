"""Dev accuracy of the raw-text export at each `--export_precision`.

    python -m benchmarks.export_precision --workdir=runs/export_precision

For each GLUE task in `--tasks` (SST-2 and MRPC by default):
1. `python -m tfbert_cli.glue` fine-tunes minilm-l6-h384-uncased on the
   first `--max_train_examples` training rows for `--num_train_epochs`
   (skipped when the model directory already holds a trained model), and
2. exports it once per precision in `--precisions` from that same model
   directory (skipped when the export directory already holds a version).
3. Each export then answers the whole dev set through `serving_default`
   (raw text in, `label` out) in its own fresh process that imports only
   tensorflow and tensorflow_text, as TF Serving would run it, at batch
   `--batch_size` in file order; the process also times that pass.

Prints, per task and precision: dev accuracy, its difference from float32
in points, the share of dev examples whose label differs from float32's,
the max abs difference of the probabilities, and the dev pass's
sentences/s (a single pass: see benchmarks/serving.py for the speed
comparison). One JSON line at the end.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np
from absl import app, flags

FLAGS = flags.FLAGS

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLUE_DATA = os.path.join(REPO_ROOT, "..", "shared", "data", "glue")
PRESET = "minilm-l6-h384-uncased"


def define_flags():
    flags.DEFINE_string("workdir", "runs/export_precision",
                        "Model directories, exports and dev inputs.")
    flags.DEFINE_list("tasks", ["sst2", "mrpc"], "GLUE tasks.")
    flags.DEFINE_list("precisions",
                      ["float32", "bfloat16", "bfloat16+constant_kernels"],
                      "--export_precision values, with +constant_kernels "
                      "for --export_constant_kernels; float32 is the "
                      "reference.")
    flags.DEFINE_integer("max_train_examples", 4000,
                         "Training rows (file order); 0 = all.")
    flags.DEFINE_float("num_train_epochs", 1.0, "Epochs.")
    flags.DEFINE_integer("max_seq_length", 128, "Truncation length.")
    flags.DEFINE_integer("batch_size", 32, "Batch size of the dev pass.")
    flags.DEFINE_string("worker", None,
                        "Internal: evaluate this export directory.")
    flags.DEFINE_string("dev_file", None, "Internal: the dev inputs (JSON).")


def _glue_task(*args):
    command = [sys.executable, "-m", "tfbert_cli.glue", *args]
    subprocess.run(command, check=True, cwd=REPO_ROOT)


def _has_version(directory):
    return os.path.isdir(directory) and any(
        name.isdigit() for name in os.listdir(directory))


def _latest_version(directory):
    return os.path.join(directory, str(max(
        int(name) for name in os.listdir(directory) if name.isdigit())))


def _export_flags(precision):
    """The export flags of a `--precisions` value."""
    precision, _, option = precision.partition("+")
    if option not in ("", "constant_kernels"):
        raise app.UsageError(f"--precisions: unknown option +{option}")
    return [f"--export_precision={precision}"] + (
        ["--export_constant_kernels"] if option else [])


def _prepare(task, workdir):
    """Trains and exports `task`; returns {precision: version dir} and the
    dev-input JSON path."""
    model_dir = os.path.join(workdir, task, "model")
    common = [f"--task={task}", f"--data_dir={GLUE_DATA}",
              f"--init_checkpoint={PRESET}", f"--model_dir={model_dir}",
              f"--max_seq_length={FLAGS.max_seq_length}",
              f"--max_train_examples={FLAGS.max_train_examples}",
              f"--num_train_epochs={FLAGS.num_train_epochs}"]
    if not os.path.exists(os.path.join(model_dir, "checkpoints",
                                       "checkpoint")):
        _glue_task(*common, "--do_train")
    exports = {}
    for precision in FLAGS.precisions:
        export_dir = os.path.join(workdir, task,
                                  f"export_{precision.replace('+', '_')}")
        if not _has_version(export_dir):
            _glue_task(*common, f"--export_dir={export_dir}",
                       *_export_flags(precision))
        exports[precision] = _latest_version(export_dir)

    from tfbert.data import glue as glue_data

    glue_task = glue_data.get_task(task)
    examples = glue_data.read_examples(
        glue_data.split_path(GLUE_DATA, glue_task, "dev"), glue_task)
    # The export answers with the task's readable label names.
    names = dict(zip(glue_task.labels,
                     glue_task.label_names or glue_task.labels))
    dev_file = os.path.join(workdir, task, "dev.json")
    with open(dev_file, "w") as f:
        json.dump({"text_a": [e.text_a for e in examples],
                   "text_b": [e.text_b for e in examples],
                   "labels": [names[e.label] for e in examples]}, f)
    return exports, dev_file


def _worker(export_dir, dev_file):
    """Answers the dev set with the export; prints one JSON line."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tokenizer ops

    with open(dev_file) as f:
        dev = json.load(f)
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    _, specs = serve.structured_input_signature
    names = sorted(specs)  # sentence, or sentence1 and sentence2
    columns = ([dev["text_a"]] if len(names) == 1
               else [dev["text_a"], dev["text_b"]])
    size = FLAGS.batch_size

    def batch(begin):
        return {name: tf.constant(column[begin:begin + size])
                for name, column in zip(names, columns)}
    serve(**batch(0))  # warm-up
    labels, probabilities = [], []
    start = time.perf_counter()
    for begin in range(0, len(columns[0]), size):
        outputs = serve(**batch(begin))
        labels += [label.decode() for label in outputs["label"].numpy()]
        probabilities.append(outputs["probabilities"].numpy())
    seconds = time.perf_counter() - start
    print(json.dumps({
        "labels": labels,
        "probabilities": np.concatenate(probabilities).tolist(),
        "sentences_per_s": len(labels) / seconds,
        "imports_tfbert": "tfbert" in sys.modules}))


def _evaluate(export_dir, dev_file):
    command = [sys.executable, "-m", "benchmarks.export_precision",
               f"--worker={export_dir}", f"--dev_file={dev_file}",
               f"--batch_size={FLAGS.batch_size}"]
    result = subprocess.run(command, check=True, capture_output=True,
                            text=True, cwd=REPO_ROOT)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv):
    del argv
    if FLAGS.worker:
        _worker(FLAGS.worker, FLAGS.dev_file)
        return
    if FLAGS.precisions[0] != "float32":
        raise app.UsageError("--precisions must start with float32")
    workdir = os.path.abspath(FLAGS.workdir)
    rows = ["| task | precision | dev accuracy | vs float32 (points) | "
            "labels differing from float32 | max abs prob diff | "
            "sentences/s (one pass) |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    summary = {}
    for task in FLAGS.tasks:
        exports, dev_file = _prepare(task, workdir)
        with open(dev_file) as f:
            gold = json.load(f)["labels"]
        results = {precision: _evaluate(path, dev_file)
                   for precision, path in exports.items()}
        if any(r["imports_tfbert"] for r in results.values()):
            raise RuntimeError("an evaluation process imported tfbert")
        reference = results["float32"]
        for precision, r in results.items():
            accuracy = 100 * np.mean(np.equal(r["labels"], gold))
            delta = accuracy - 100 * np.mean(
                np.equal(reference["labels"], gold))
            differ = np.mean(np.not_equal(r["labels"], reference["labels"]))
            diff = np.abs(np.array(r["probabilities"])
                          - np.array(reference["probabilities"])).max()
            rows.append(f"| {task} | {precision} | {accuracy:.2f} | "
                        f"{delta:+.2f} | {100 * differ:.2f} % | {diff:.1e} | "
                        f"{r['sentences_per_s']:.1f} |")
            summary[f"{task}/{precision}"] = {
                "accuracy": accuracy, "delta_points": delta,
                "differing_labels": differ, "max_prob_diff": diff,
                "sentences_per_s": r["sentences_per_s"]}
    print("\n".join(rows))
    print(json.dumps(summary))


if __name__ == "__main__":
    define_flags()
    app.run(main)
