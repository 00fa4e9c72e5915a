"""A user's mistake, and how every program reports it: one line,
`PROGRAM: error: MESSAGE` (plain Python: the task library raises and reports
these without absl)."""

import os
import sys


class UserError(ValueError):
    """A mistake in the command line or the input files: reported as one
    line, without a traceback."""


def program_name():
    """The running program's name, as its messages start: `tfbert-glue`, or
    `glue` for `python -m tasks.glue`."""
    return os.path.basename(sys.argv[0]).removesuffix(".py")


def report_error(error, label="error"):
    """Prints `error` as one line: `PROGRAM: error: MESSAGE` (`PROGRAM:
    MESSAGE` without a `label`)."""
    message = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.strerror:
        message = (f"{error.filename}: {error.strerror}" if error.filename
                   else error.strerror)
    prefix = (f"{program_name()}: {label}: " if label
              else f"{program_name()}: ")
    print(prefix + " ".join(message.split()), file=sys.stderr)
