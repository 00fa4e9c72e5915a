"""GLUE distillation: dev score of K-layer students with and without the
teacher, as a fraction of the teacher's, over seeds.

    nice -n 5 python -m benchmarks.distillation --task=sst2 \
      --student_num_layers=3,2 --seeds=1,2,3 --max_train_examples=4000 \
      --num_train_epochs=2 --max_seq_length=64

Runs `python -m tasks.glue` in subprocesses on ../shared/data: the teacher
(the MiniLM-L6 preset fine-tuned, seed `--teacher_seed`; with
`--notrain_teacher` the finished one in WORKDIR/teacher), then for every K
of `--student_num_layers` and every seed students made of the same K
teacher layers (`--student_num_layers`), trained with the same flags, of
the kinds in `--kinds`:
- `distilled`: `--distill_alpha`, `--distill_temperature`;
- `labels_only`: `--distill_alpha=1` (the teacher's term has weight 0, so
  only the teacher's initialisation remains);
- `distilled_unlabelled` (with `--distill_examples=N`): distilled, with
  the N training texts after the first `--max_train_examples` beside the
  labelled ones, without their labels, as a `--distill_file`
  (WORKDIR/distill.txt; single-sentence tasks only);
- `distilled_layers`: distilled, with the intermediate-layer terms
  (`--distill_hidden_weight`, `--distill_attention_weight`: the teacher
  runs in every step).
Every student pays the teacher's logit pass; its time is read from the log
(`teacher logits of N training examples in S s`). With `--export`, the
teacher and the first seed's student of the first kind in `--kinds` are
exported under WORKDIR/<run>/export (for benchmarks/serving.py). Prints
one JSON line per run (dev metrics, wall seconds of the process,
teacher-pass seconds, training seconds: the sum of the epochs' times the
log states) and one summary line per K: each student kind's
score as a fraction of the teacher's (mean, min, max over the seeds).

With `--step_rounds=N` (alone with `--notrain`) one process times a
training step of a K-layer student (the first of `--student_num_layers`)
made of the MiniLM-L6 preset's layers, at batch `--serving_batch_size` of
SST-2 sentences packed to `--max_seq_length`, in three forms taking turns
N times: plain fine-tuning (cross-entropy), distillation with cached
teacher logits (`TaskDistillationLoss`, the same student step) and
distillation with the intermediate-layer terms (`LayerTransfer`: the
teacher's forward runs in the step, without a backward pass). It prints
the median milliseconds per step and each form's ratio to plain
fine-tuning.

With `--serving_rounds=N` (after training, or alone with `--notrain` on a
WORKDIR that holds the exports) the exported teacher and the exported
students (the first seed's of the first kind) are measured with
benchmarks/serving.py's tfbert runtime (raw SST-2 dev sentences in, one
fresh process each), interleaved N times: sentences/s at batch
`--serving_batch_size` and batch-1 p50, medians over the rounds, and each
student's ratio to the teacher.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import time

from absl import app, flags

FLAGS = flags.FLAGS

flags.DEFINE_string("task", "sst2", "GLUE task.")
flags.DEFINE_string("data_dir", "../shared/data/glue", "GLUE data directory.")
flags.DEFINE_string("workdir", "/tmp/distillation", "Model dirs and logs.")
flags.DEFINE_string("init_checkpoint", "minilm-l6-h384-uncased",
                    "The teacher's checkpoint.")
flags.DEFINE_list("student_num_layers", ["3", "2"], "The students' K.")
flags.DEFINE_list("seeds", ["1", "2", "3"], "Seeds of the students.")
flags.DEFINE_integer("teacher_seed", 42, "Seed of the teacher.")
flags.DEFINE_float("distill_alpha", 0.5, "Hard-label weight when distilling.")
flags.DEFINE_float("distill_temperature", 2.0, "Softmax temperature.")
flags.DEFINE_float("distill_hidden_weight", 1.0, "Hidden-state term of the "
                   "distilled_layers students.")
flags.DEFINE_float("distill_attention_weight", 1.0, "Attention term of the "
                   "distilled_layers students.")
flags.DEFINE_integer("max_train_examples", 0, "First N examples (0 = all).")
flags.DEFINE_float("num_train_epochs", 3.0, "Epochs of every run.")
flags.DEFINE_integer("max_seq_length", 128, "Packed length.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_bool("train", True, "Train (else only --serving_rounds).")
flags.DEFINE_bool("train_teacher", True, "Train the teacher (else read the "
                  "finished one in WORKDIR/teacher, e.g. to add students).")
flags.DEFINE_integer("serving_rounds", 0, "Interleaved serving measurements "
                     "of the exports (0: none).")
flags.DEFINE_integer("serving_batch_size", 32, "Batch of the throughput pass.")
flags.DEFINE_list("kinds", ["distilled", "labels_only",
                           "distilled_unlabelled"],
                  "Student kinds (distilled_unlabelled only with "
                  "--distill_examples).")
flags.DEFINE_integer("distill_examples", 0, "Unlabelled training texts of "
                     "the distilled_unlabelled students (0: none).")
flags.DEFINE_integer("step_rounds", 0, "Interleaved rounds of the training "
                     "step timing (0: none).")
flags.DEFINE_integer("step_count", 10, "Timed steps per form and round.")
flags.DEFINE_bool("export", False, "Export the teacher and the first seed's "
                  "students of the first kind in --kinds.")

# The student kinds `--kinds` takes (the module docstring says what each is).
KINDS = ("distilled", "labels_only", "distilled_unlabelled",
         "distilled_layers")
_TEACHER_PASS = re.compile(r"teacher logits of \d+ training examples in "
                           r"([\d.]+) s")
# A progress line: the epoch and the seconds since the epoch began.
_PROGRESS = re.compile(r"^epoch (\d+)/\d+ step \d+/\d+: .*\((\d+) s\)$",
                       re.MULTILINE)


def _glue(model_dir, seed, *extra, export=False):
    command = [
        sys.executable, "-m", "tasks.glue", f"--task={FLAGS.task}",
        f"--data_dir={FLAGS.data_dir}", f"--model_dir={model_dir}",
        "--do_train", "--do_eval", f"--max_seq_length={FLAGS.max_seq_length}",
        f"--learning_rate={FLAGS.learning_rate}",
        f"--num_train_epochs={FLAGS.num_train_epochs}",
        f"--max_train_examples={FLAGS.max_train_examples}",
        f"--seed={seed}", *extra]
    if export:
        command.append(f"--export_dir={os.path.join(model_dir, 'export')}")
    os.makedirs(model_dir, exist_ok=True)
    log_path = os.path.join(model_dir, "log.txt")
    start = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        status = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                                check=False).returncode
    seconds = time.perf_counter() - start
    if status:
        raise RuntimeError(f"{' '.join(command)} failed; see {log_path}")
    return {**_results(model_dir), "wall_seconds": round(seconds, 1)}


def _results(model_dir):
    """The dev metrics of the finished run in MODEL_DIR, the teacher
    pass's seconds its log states (None if it has none) and its training
    seconds (the sum of each epoch's last progress line)."""
    with open(os.path.join(model_dir, "eval_results.json"),
              encoding="utf-8") as f:
        results = json.load(f)
    with open(os.path.join(model_dir, "log.txt"), encoding="utf-8") as f:
        log = f.read()
    teacher_pass = _TEACHER_PASS.search(log)
    epochs = {}  # The last progress line of each epoch.
    for epoch, seconds in _PROGRESS.findall(log):
        epochs[epoch] = int(seconds)
    split = next(key for key in results if key != "task")
    return {"dev": results[split],
            "teacher_pass_seconds": (float(teacher_pass.group(1))
                                     if teacher_pass else None),
            "training_seconds": sum(epochs.values())}


def _report(name, result):
    print(json.dumps({"run": name, **result}), flush=True)
    return result


def _serve(model_dir):
    """benchmarks/serving.py's tfbert runtime on MODEL_DIR/export, in a
    fresh process: its JSON result."""
    command = [sys.executable, "-m", "benchmarks.serving", "--worker=tfbert",
               f"--workdir={model_dir}",
               f"--max_seq_length={FLAGS.max_seq_length}",
               f"--batch_size={FLAGS.serving_batch_size}",
               f"--started_at={time.time()}"]
    result = subprocess.run(command, capture_output=True, text=True,
                            check=False)
    if result.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n"
                           f"{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _compare_serving():
    runs = {"teacher": os.path.join(FLAGS.workdir, "teacher"), **{
        f"{FLAGS.kinds[0]}_k{k}": os.path.join(
            FLAGS.workdir, f"{FLAGS.kinds[0]}_k{k}_seed{FLAGS.seeds[0]}")
        for k in FLAGS.student_num_layers}}
    measured = {name: [] for name in runs}
    for _ in range(FLAGS.serving_rounds):
        for name, model_dir in runs.items():
            measured[name].append(_serve(model_dir))
    loads = os.getloadavg()
    medians = {name: {key: statistics.median(r[key] for r in results)
                      for key in ("sentences_per_s", "p50_ms")}
               for name, results in measured.items()}
    teacher = medians["teacher"]
    print(json.dumps({
        "serving": medians, "batch_size": FLAGS.serving_batch_size,
        "rounds": FLAGS.serving_rounds, "load_average_after": loads[0],
        **{f"{name}_vs_teacher": {
            "throughput": round(m["sentences_per_s"]
                                / teacher["sentences_per_s"], 3),
            "p50": round(m["p50_ms"] / teacher["p50_ms"], 3)}
           for name, m in medians.items() if name != "teacher"}}),
        flush=True)


def _time_steps():
    """Median ms per training step of the three forms (see the module
    docstring), taking turns `--step_rounds` times."""
    # Deferred: the module's flags and --help load without TensorFlow.
    import keras
    import numpy as np

    from tfbert.data import glue
    from tfbert.models import SequenceClassifier
    from tfbert.models.student import student_from_teacher
    from tfbert.text import Preprocessor
    from tfbert.training.distillation import (
        DistillationConfig, TaskDistillationLoss, with_teacher_outputs)
    from tfbert.training.layer_transfer import LayerTransfer

    batch = FLAGS.serving_batch_size
    examples = _training_examples(glue.get_task("sst2"))[:batch]
    preprocessor = Preprocessor.from_pretrained(
        FLAGS.init_checkpoint, seq_length=FLAGS.max_seq_length)
    x = {name: np.asarray(value) for name, value in preprocessor(
        [example.text_a for example in examples]).items()}
    labels = np.array([int(example.label) for example in examples])
    keras.utils.set_random_seed(0)
    teacher = SequenceClassifier.from_pretrained(FLAGS.init_checkpoint,
                                                 num_classes=2)
    k = int(FLAGS.student_num_layers[0])
    config = DistillationConfig(
        FLAGS.distill_alpha, FLAGS.distill_temperature,
        FLAGS.distill_hidden_weight, FLAGS.distill_attention_weight)
    teacher_logits = np.asarray(teacher.predict(x, verbose=0))
    forms = {
        "fine_tuning": (student_from_teacher(teacher, k), labels,
                        keras.losses.SparseCategoricalCrossentropy(
                            from_logits=True)),
        "cached_logits": (student_from_teacher(teacher, k),
                          with_teacher_outputs(labels, teacher_logits),
                          TaskDistillationLoss(config)),
    }
    forms["layer_transfer"] = (
        LayerTransfer(student_from_teacher(teacher, k), teacher, config),
        with_teacher_outputs(labels, teacher_logits),
        TaskDistillationLoss(config))
    for model, y, loss in forms.values():
        model.compile(optimizer=keras.optimizers.AdamW(1e-5), loss=loss)
        for _ in range(3):  # Tracing and warm-up.
            model.train_on_batch(x, y)
    times = {name: [] for name in forms}
    for _ in range(FLAGS.step_rounds):
        for name, (model, y, _) in forms.items():
            start = time.perf_counter()
            for _ in range(FLAGS.step_count):
                model.train_on_batch(x, y)
            times[name].append(1000 * (time.perf_counter() - start)
                               / FLAGS.step_count)
    medians = {name: round(statistics.median(t), 1)
               for name, t in times.items()}
    print(json.dumps({
        "step_ms": medians, "per_round_ms": times,
        "student_num_layers": k, "batch_size": batch,
        "max_seq_length": FLAGS.max_seq_length,
        "vs_fine_tuning": {name: round(ms / medians["fine_tuning"], 3)
                           for name, ms in medians.items()},
        "load_average_after": os.getloadavg()[0]}), flush=True)


def main(argv):
    del argv
    if FLAGS.train:
        _train_all()
    if FLAGS.step_rounds:
        _time_steps()
    if FLAGS.serving_rounds:
        _compare_serving()


def _training_examples(task):
    """The `Example`s of TASK's training file under --data_dir."""
    from tfbert.data import glue  # Deferred, as in `_write_distill_file`.

    return glue.read_examples(glue.split_path(FLAGS.data_dir, task, "train"),
                              task)


def _write_distill_file():
    """WORKDIR/distill.txt: the `--distill_examples` training sentences
    after the first `--max_train_examples`, one per line, without their
    labels; returns its path."""
    # Deferred: the module's flags and --help load without TensorFlow.
    from tfbert.data import glue

    task = glue.get_task(FLAGS.task)
    if task.is_pair:
        raise app.UsageError("--distill_examples: only for single-sentence "
                             f"tasks, not {FLAGS.task}")
    examples = _training_examples(task)
    start = FLAGS.max_train_examples
    chosen = examples[start:start + FLAGS.distill_examples]
    if len(chosen) < FLAGS.distill_examples:
        raise app.UsageError(f"--distill_examples={FLAGS.distill_examples}: "
                             f"only {len(chosen)} training texts follow the "
                             f"first {start}")
    path = os.path.join(FLAGS.workdir, "distill.txt")
    os.makedirs(FLAGS.workdir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        file.writelines(" ".join(example.text_a.split()) + "\n"
                        for example in chosen)
    return path


def _kinds():
    """(kind, alpha, extra flags) of every student kind in --kinds
    (`distilled_unlabelled` only with --distill_examples)."""
    unknown = set(FLAGS.kinds) - set(KINDS)
    if unknown:
        raise app.UsageError(f"--kinds: unknown {sorted(unknown)}")
    kinds = {"distilled": (FLAGS.distill_alpha, []),
             "labels_only": (1.0, []),
             "distilled_layers": (FLAGS.distill_alpha, [
                 f"--distill_hidden_weight={FLAGS.distill_hidden_weight}",
                 f"--distill_attention_weight="
                 f"{FLAGS.distill_attention_weight}"])}
    if FLAGS.distill_examples and "distilled_unlabelled" in FLAGS.kinds:
        kinds["distilled_unlabelled"] = (
            FLAGS.distill_alpha, [f"--distill_file={_write_distill_file()}"])
    return [(kind, *kinds[kind]) for kind in FLAGS.kinds if kind in kinds]


def _train_all():
    kinds = _kinds()
    teacher_dir = os.path.join(FLAGS.workdir, "teacher")
    if FLAGS.train_teacher:
        teacher = _report("teacher", _glue(
            teacher_dir, FLAGS.teacher_seed,
            f"--init_checkpoint={FLAGS.init_checkpoint}",
            export=FLAGS.export))
    else:
        teacher = _report("teacher", _results(teacher_dir))
    metric = next(k for k in teacher["dev"] if k != "num_examples")
    for k in FLAGS.student_num_layers:
        fractions = {kind: [] for kind, _, _ in kinds}
        for index, seed in enumerate(FLAGS.seeds):
            for kind, alpha, kind_flags in kinds:
                extra = [f"--teacher_model_dir={teacher_dir}",
                         f"--student_num_layers={k}",
                         f"--distill_temperature={FLAGS.distill_temperature}",
                         f"--distill_alpha={alpha}", *kind_flags]
                result = _report(f"{kind}_k{k}_seed{seed}", _glue(
                    os.path.join(FLAGS.workdir, f"{kind}_k{k}_seed{seed}"),
                    seed, *extra, export=(FLAGS.export and not index
                                          and kind == kinds[0][0])))
                fractions[kind].append(result["dev"][metric]
                                       / teacher["dev"][metric])
        print(json.dumps({
            "metric": metric, "teacher": teacher["dev"][metric],
            "student_num_layers": int(k), **{
                f"{kind}_fraction_of_teacher": {
                    "mean": round(sum(v) / len(v), 4),
                    "min": round(min(v), 4), "max": round(max(v), 4)}
                for kind, v in fractions.items()}}), flush=True)


if __name__ == "__main__":
    app.run(main)
