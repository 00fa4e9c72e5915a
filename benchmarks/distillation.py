"""SST-2 (or any GLUE task) distillation: dev score of a K-layer student
with and without the teacher, as a fraction of the teacher's.

    nice -n 5 python -m benchmarks.distillation --task=sst2 \
      --student_num_layers=3 --max_train_examples=0 --num_train_epochs=3

Runs `python -m tasks.glue` three times in subprocesses on ../shared/data:
the teacher (the MiniLM-L6 preset fine-tuned), then two students made of
the same K teacher layers (`--student_num_layers`), trained with the same
flags: one distilled (`--distill_alpha`, `--distill_temperature`), one on
the labels alone (`--distill_alpha=1`: the teacher's term has weight 0, so
only the teacher's initialisation remains). Prints one JSON line per run
(dev metrics, wall seconds of the whole process) and a summary line.
"""

import json
import os
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
flags.DEFINE_integer("student_num_layers", 3, "K, the student's layers.")
flags.DEFINE_float("distill_alpha", 0.5, "Hard-label weight when distilling.")
flags.DEFINE_float("distill_temperature", 2.0, "Softmax temperature.")
flags.DEFINE_integer("max_train_examples", 0, "First N examples (0 = all).")
flags.DEFINE_float("num_train_epochs", 3.0, "Epochs of every run.")
flags.DEFINE_integer("max_seq_length", 128, "Packed length.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_integer("seed", 42, "Seed.")


def _glue(model_dir, *extra):
    command = [
        sys.executable, "-m", "tasks.glue", f"--task={FLAGS.task}",
        f"--data_dir={FLAGS.data_dir}", f"--model_dir={model_dir}",
        "--do_train", "--do_eval", f"--max_seq_length={FLAGS.max_seq_length}",
        f"--learning_rate={FLAGS.learning_rate}",
        f"--num_train_epochs={FLAGS.num_train_epochs}",
        f"--max_train_examples={FLAGS.max_train_examples}",
        f"--seed={FLAGS.seed}", *extra]
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
    split = next(key for key in results if key != "task")
    return {"dev": results[split], "wall_seconds": round(seconds, 1)}


def main(argv):
    del argv
    teacher_dir = os.path.join(FLAGS.workdir, "teacher")
    student = [f"--teacher_model_dir={teacher_dir}",
               f"--student_num_layers={FLAGS.student_num_layers}",
               f"--distill_temperature={FLAGS.distill_temperature}"]
    runs = {
        "teacher": (teacher_dir,
                    [f"--init_checkpoint={FLAGS.init_checkpoint}"]),
        "distilled": (os.path.join(FLAGS.workdir, "distilled"),
                      student + [f"--distill_alpha={FLAGS.distill_alpha}"]),
        "labels_only": (os.path.join(FLAGS.workdir, "labels_only"),
                        student + ["--distill_alpha=1"]),
    }
    results = {}
    for name, (model_dir, extra) in runs.items():
        results[name] = _glue(model_dir, *extra)
        print(json.dumps({"run": name, **results[name]}), flush=True)
    metric = next(k for k in results["teacher"]["dev"] if k != "num_examples")
    teacher_score = results["teacher"]["dev"][metric]
    print(json.dumps({
        "metric": metric, "teacher": teacher_score,
        **{f"{name}_fraction_of_teacher":
           round(results[name]["dev"][metric] / teacher_score, 4)
           for name in ("distilled", "labels_only")}}))


if __name__ == "__main__":
    app.run(main)
