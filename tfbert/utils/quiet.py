"""Keeping TensorFlow's start-up notices off the terminal.

TensorFlow prints some notices (oneDNN, "could not find cuda drivers", cuInit
on a machine without a GPU) from C++ before it reads TF_CPP_MIN_LOG_LEVEL, so
the variable alone cannot hide them. `quiet_tensorflow_start` silences the
process's native stderr for a block (TensorFlow's import, the start of its
runtime). Set TF_CPP_MIN_LOG_LEVEL=0 or 1 to see them.
"""

import contextlib
import os
import sys

QUIET = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") not in ("0", "1")


@contextlib.contextmanager
def quiet_tensorflow_start():
    """Silences native (C++) stderr for the block when `QUIET`. Python
    exceptions still propagate, and Python's own stderr is flushed first."""
    if not QUIET:
        yield
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
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
