"""Checks of input files and output directories that need no TensorFlow:
the library's readers and writers make them, and the programs make them
before TensorFlow starts."""

import os


def check_input_file(path, expected):
    """Raises where `path` cannot be read as a file.

    Args:
      path: str or path-like.
      expected: what the file should be, for the message (e.g. "a file of
        texts").

    Raises:
      FileNotFoundError: "PATH: no such file".
      IsADirectoryError: "PATH: is a directory, expected EXPECTED".
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, expected {expected}")


def holds_files(directory):
    """Whether `directory` exists and is not empty: a new tree is published
    only where this is false, so nothing already written is replaced."""
    return os.path.exists(directory) and bool(os.listdir(directory))
