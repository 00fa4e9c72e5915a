"""Task recipes: GLUE, SQuAD, NER and pretraining on one runner
(`tfbert.tasks.runner`), plus the checkpoint and data tools.

Each module's `main()` is a command-line program (`tfbert-glue`,
`tfbert-squad`, `tfbert-ner`, `tfbert-pretrain`, ...; `python -m tasks.X`
from a checkout).

The programs keep TensorFlow's start-up notices off the terminal (oneDNN,
"could not find cuda drivers", cuInit on a machine without a GPU) unless
TF_CPP_MIN_LOG_LEVEL is set: TensorFlow prints some of them before it reads
its log level, so its native stderr is silenced while it loads and while it
starts its runtime (`quiet_tensorflow_start`).
"""

import contextlib
import os
import sys

_QUIET = "TF_CPP_MIN_LOG_LEVEL" not in os.environ
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@contextlib.contextmanager
def quiet_tensorflow_start():
    """Silences native (C++) stderr for the block, unless the user set
    TF_CPP_MIN_LOG_LEVEL. Python exceptions still propagate."""
    if not _QUIET:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


with quiet_tensorflow_start():
    import tensorflow  # noqa: F401
