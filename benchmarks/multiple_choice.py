"""Multiple choice on SQuAD sentences: which of four sentences of the
paragraph answers the question? (`tfbert.data.squad_choices`; chance 25%.)

    python -m benchmarks.multiple_choice --num_train=2000 --num_dev=1000

Builds the set from ../shared/data's SQuAD v1.1 file, split by article (the
last `--dev_articles` articles are dev, so no paragraph is in both), writes
it as JSONL under `--workdir`, and runs `python -m tasks.multiple_choice`
(MiniLM by default) with --do_train --do_eval. Prints the run's wall time
and eval_results.json as one JSON line.
"""

import json
import os
import subprocess
import sys
import time

from absl import app, flags

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "data"),
    "Directory holding squad_v1.1/dev-v1.1.partA.json.")
flags.DEFINE_string("workdir", "/tmp/tfbert_multiple_choice",
                    "Where the data and the model directory go.")
flags.DEFINE_string("init_checkpoint", "minilm-l6-h384-uncased",
                    "Preset or checkpoint directory of any family.")
flags.DEFINE_integer("dev_articles", 5, "Articles held out as dev.")
flags.DEFINE_integer("num_train", 2000, "Training examples (the first N).")
flags.DEFINE_integer("num_dev", 1000, "Dev examples (the first N).")
flags.DEFINE_float("num_train_epochs", 2.0, "Training epochs.")
flags.DEFINE_integer("max_seq_length", 128, "Longest packed pair.")
flags.DEFINE_integer("train_batch_size", 16, "Examples per batch.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")


def main(argv):
    del argv
    from tfbert.data.squad_choices import (split_by_article,
                                           squad_choice_examples)

    train, dev = split_by_article(squad_choice_examples(os.path.join(
        FLAGS.data_dir, "squad_v1.1", "dev-v1.1.partA.json")),
        FLAGS.dev_articles)
    splits = {"train": train, "dev": dev}
    splits["train"] = splits["train"][:FLAGS.num_train]
    splits["dev"] = splits["dev"][:FLAGS.num_dev]
    os.makedirs(FLAGS.workdir, exist_ok=True)
    for name, rows in splits.items():
        with open(os.path.join(FLAGS.workdir, f"{name}.jsonl"), "w",
                  encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
    model_dir = os.path.join(FLAGS.workdir, "model")
    start = time.time()
    subprocess.run([
        sys.executable, "-m", "tasks.multiple_choice",
        f"--train_file={os.path.join(FLAGS.workdir, 'train.jsonl')}",
        f"--dev_file={os.path.join(FLAGS.workdir, 'dev.jsonl')}",
        f"--init_checkpoint={FLAGS.init_checkpoint}",
        f"--model_dir={model_dir}", "--overwrite_model_dir", "--do_train",
        "--do_eval", f"--max_seq_length={FLAGS.max_seq_length}",
        f"--train_batch_size={FLAGS.train_batch_size}",
        f"--num_train_epochs={FLAGS.num_train_epochs}",
        f"--learning_rate={FLAGS.learning_rate}"], check=True)
    with open(os.path.join(model_dir, "eval_results.json")) as f:
        results = json.load(f)
    print(json.dumps({"num_train": len(splits["train"]),
                      "num_dev": len(splits["dev"]),
                      "epochs": FLAGS.num_train_epochs,
                      "wall_s": round(time.time() - start, 1),
                      "dev": results["dev"]}), flush=True)


if __name__ == "__main__":
    app.run(main)
