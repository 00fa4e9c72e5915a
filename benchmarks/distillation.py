"""GLUE distillation: dev score of K-layer students with and without the
teacher, as a fraction of the teacher's, over seeds.

    nice -n 5 python -m benchmarks.distillation --task=sst2 \
      --student_num_layers=3,2 --seeds=1,2,3 --max_train_examples=4000 \
      --num_train_epochs=2 --max_seq_length=64

Runs `python -m tasks.glue` in subprocesses on ../shared/data: the teacher
(the MiniLM-L6 preset fine-tuned, seed `--teacher_seed`), then for every K
of `--student_num_layers` and every seed two students made of the same K
teacher layers (`--student_num_layers`), trained with the same flags: one
distilled (`--distill_alpha`, `--distill_temperature`), one on the labels
alone (`--distill_alpha=1`: the teacher's term has weight 0, so only the
teacher's initialisation remains). Both students pay the teacher's logit
pass; its time is read from the log (`teacher logits of N training
examples in S s`). With `--export`, the teacher and the first seed's
distilled students are exported under WORKDIR/<run>/export (for
benchmarks/serving.py). Prints one JSON line per run (dev metrics, wall
seconds of the process, teacher-pass seconds) and one summary line per K:
each student kind's score as a fraction of the teacher's (mean, min, max
over the seeds).

With `--serving_rounds=N` (after training, or alone with `--notrain` on a
WORKDIR that holds the exports) the exported teacher and the exported
students (the first seed's distilled ones) are measured with
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
flags.DEFINE_integer("max_train_examples", 0, "First N examples (0 = all).")
flags.DEFINE_float("num_train_epochs", 3.0, "Epochs of every run.")
flags.DEFINE_integer("max_seq_length", 128, "Packed length.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_bool("train", True, "Train (else only --serving_rounds).")
flags.DEFINE_integer("serving_rounds", 0, "Interleaved serving measurements "
                     "of the exports (0: none).")
flags.DEFINE_integer("serving_batch_size", 32, "Batch of the throughput pass.")
flags.DEFINE_bool("export", False, "Export the teacher and the first seed's "
                  "distilled students.")

_TEACHER_PASS = re.compile(r"teacher logits of \d+ training examples in "
                           r"([\d.]+) s")


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
    with open(os.path.join(model_dir, "eval_results.json"),
              encoding="utf-8") as f:
        results = json.load(f)
    with open(log_path, encoding="utf-8") as f:
        teacher_pass = _TEACHER_PASS.search(f.read())
    split = next(key for key in results if key != "task")
    return {"dev": results[split], "wall_seconds": round(seconds, 1),
            "teacher_pass_seconds": (float(teacher_pass.group(1))
                                     if teacher_pass else None)}


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
        f"distilled_k{k}": os.path.join(
            FLAGS.workdir, f"distilled_k{k}_seed{FLAGS.seeds[0]}")
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


def main(argv):
    del argv
    if FLAGS.train:
        _train_all()
    if FLAGS.serving_rounds:
        _compare_serving()


def _train_all():
    teacher_dir = os.path.join(FLAGS.workdir, "teacher")
    teacher = _report("teacher", _glue(
        teacher_dir, FLAGS.teacher_seed,
        f"--init_checkpoint={FLAGS.init_checkpoint}", export=FLAGS.export))
    metric = next(k for k in teacher["dev"] if k != "num_examples")
    for k in FLAGS.student_num_layers:
        fractions = {"distilled": [], "labels_only": []}
        for index, seed in enumerate(FLAGS.seeds):
            for kind, alpha in (("distilled", FLAGS.distill_alpha),
                                ("labels_only", 1.0)):
                extra = [f"--teacher_model_dir={teacher_dir}",
                         f"--student_num_layers={k}",
                         f"--distill_temperature={FLAGS.distill_temperature}",
                         f"--distill_alpha={alpha}"]
                result = _report(f"{kind}_k{k}_seed{seed}", _glue(
                    os.path.join(FLAGS.workdir, f"{kind}_k{k}_seed{seed}"),
                    seed, *extra, export=(FLAGS.export and not index
                                          and kind == "distilled")))
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
