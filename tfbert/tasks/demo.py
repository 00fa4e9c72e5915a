"""`make demo`: fine-tune MiniLM on the bundled sentiment reviews, evaluate,
export a SavedModel and classify new sentences through it.

    tfbert-demo        (python -m tasks.demo from a checkout)
"""

import os
import shutil
import subprocess
import sys

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_DATA = os.path.join(PACKAGE, "data", "demo")
QUERY_SCRIPT = os.path.join(PACKAGE, "export", "query.py")
MODEL_DIR = os.path.join("runs", "demo_sentiment")
EXPORT_DIR = os.path.join("saved_models", "demo_sentiment")
QUERIES = [
    "An absolute masterpiece, I loved every minute of it",
    "The battery died after two days and support never answered",
    "Friendly staff and the pizza was great",
    "What a boring, predictable waste of an evening",
]


def run(args):
    print("+ " + " ".join(args), flush=True)
    subprocess.run(args, check=True)


def main():
    shutil.rmtree(MODEL_DIR, ignore_errors=True)
    run([sys.executable, "-m", "tfbert.tasks.glue", "--task=sst2",
         f"--data_dir={os.path.normpath(DEMO_DATA)}",
         "--init_checkpoint=minilm-l6-h384-uncased",
         f"--model_dir={MODEL_DIR}", f"--export_dir={EXPORT_DIR}",
         "--do_train", "--do_eval", "--max_seq_length=64",
         "--train_batch_size=16", "--eval_batch_size=64",
         "--learning_rate=1e-4", "--num_train_epochs=3", "--seed=42"])
    # A fresh process that imports only TensorFlow and tensorflow-text, as
    # TF Serving would load the model: the query script runs as a file, not
    # through the tfbert package.
    run([sys.executable, QUERY_SCRIPT, EXPORT_DIR, *QUERIES])


if __name__ == "__main__":
    main()
