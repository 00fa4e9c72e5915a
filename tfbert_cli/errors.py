"""A user's mistake, and how every program reports it: one line,
`PROGRAM: error: MESSAGE` (plain Python: the task library raises and reports
these without absl).

A message names the parameter it is about in backticks, as the library
knows it (a config field): "`model_dir`=X has no trained model; run with
`do_train` first". `render` writes those names as the user gave them:
`--model_dir` on the command line, `model_dir` from Python.
"""

import os
import re
import sys

# A name in backticks: what `render` may rewrite.
_MARKED_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


class UserError(ValueError):
    """A mistake in the command line or the input files: reported as one
    line, without a traceback."""


def render(message, parameters, command_line):
    """`message` with each backticked name that is one of `parameters` (the
    config's field names, which are the program's flags) written as the
    user gave it: `--name` when `command_line`, else the plain `name`.

    Only a whole backticked word is a name: "`do_train`" is `do_train`
    even when `do_train_x` is a parameter too. Backticked text that is not
    one of `parameters` ("`text ||| text`", a Keras error's "`units`") is
    left as it is, backticks and all, so a message reads the same wherever
    it was not meant to name a parameter.
    """
    parameters = frozenset(parameters)

    def name(match):
        if match.group(1) not in parameters:
            return match.group(0)
        return f"--{match.group(1)}" if command_line else match.group(1)

    return _MARKED_NAME.sub(name, message)


def program_name():
    """The running program's name, as its messages start: `tfbert-glue`, or
    `glue` for `python -m tasks.glue`."""
    return os.path.basename(sys.argv[0]).removesuffix(".py")


def report_error(error, label="error", parameters=(), command_line=True):
    """Prints `error` as one line: `PROGRAM: error: MESSAGE` (`PROGRAM:
    MESSAGE` without a `label`), the `parameters` it names in backticks
    written as flags (`command_line`) or as plain names (`render`)."""
    message = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.strerror:
        message = (f"{error.filename}: {error.strerror}" if error.filename
                   else error.strerror)
    message = render(message, parameters, command_line)
    prefix = (f"{program_name()}: {label}: " if label
              else f"{program_name()}: ")
    print(prefix + " ".join(message.split()), file=sys.stderr)
