"""`make demo`: fine-tune MiniLM on the bundled sentiment reviews, evaluate,
export a SavedModel and classify new sentences through it.

    tfbert-demo        (python -m tasks.demo from a checkout)
"""

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys

from tfbert_cli.query import OneLineErrorParser

# Found without importing tfbert (which starts TensorFlow).
DEMO_DATA = os.path.join(
    importlib.util.find_spec("tfbert").submodule_search_locations[0], "data",
    "demo")
QUERY_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "query.py")
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


def main(argv=None):
    # No options: --help says what the demo does.
    OneLineErrorParser(
        prog="tfbert-demo", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    shutil.rmtree(MODEL_DIR, ignore_errors=True)
    run([sys.executable, "-m", "tfbert_cli.glue", "--task=sst2",
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
