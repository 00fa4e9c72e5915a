"""An absl program that checks its flags before it imports TensorFlow.

`main_program` defines the flags, parses them (`--help` is answered here),
runs the checks that need only Python and only then imports the module
that does the work, so `--help` and a refused flag cost no TensorFlow start.
Every user mistake is one line, `PROGRAM: error: MESSAGE`, exit status 2.
"""

import importlib
import sys

from absl import app, flags, logging

from tfbert_cli.errors import UserError, report_error
from tfbert_cli.specs import config_class, config_of

FLAGS = flags.FLAGS


def define(fv, specs):
    """Defines flags in the `FlagValues` `fv` from specs
    `(kind, name, default, help)` (kind: string, bool, integer, float, list)
    or `("enum", name, default, help, values)`."""
    for kind, name, default, help_text, *values in specs:
        define_fn = getattr(flags, f"DEFINE_{kind}")
        define_fn(name, default, *values, help_text, flag_values=fv)


def parsed_config(specs, flag_values=FLAGS):
    """The values of the parsed flags defined from `specs`, as an instance
    of their `config_class` (what a program's body is called with)."""
    return config_of(config_class("ProgramConfig", specs), flag_values)


def _parse_flags(argv, flag_values=FLAGS):
    """absl's flag parsing, but a bad flag is one line with exit status 2,
    as every other user error (absl's own parser exits with 1)."""
    try:
        return flag_values(argv)
    except flags.Error as error:
        report_error(error)
        sys.exit(2)
    except SystemExit as done:
        # absl exits with 1 once it has printed --help or --helpfull: asking
        # for help is no failure.
        sys.exit(0 if done.code == 1 else done.code)


def _resolve(body):
    """`body`, or the function a "module:function" string names (imported
    now: that import may start TensorFlow)."""
    if callable(body):
        return body
    module, function = body.split(":")
    return getattr(importlib.import_module(module), function)


def main_program(specs, body, *, required=(), check=None, doc=None,
                 user_errors=(ValueError, OSError)):
    """Runs an absl program: defines its flags from `define` specs (or the
    callable `specs`; all shown by --help, after `doc`), checks the
    `required` ones and calls `check()` (Python only; raises `UserError`),
    then imports `body` ("module:function", or a callable) and exits with
    the status `body(config)` returns: `config` is the flags' values as a
    `specs.config_class` of the specs (None for callable `specs`, whose
    body reads its own). The `user_errors` raised by the checks or `body`
    are reported in one line, with exit status 2, the parameters they name
    in backticks written as the program's flags (`errors.render`)."""
    if doc:
        sys.modules["__main__"].__doc__ = doc
    before = set(FLAGS)
    specs() if callable(specs) else define(FLAGS, specs)
    # The parameters a message names in backticks are these flags.
    names = frozenset(set(FLAGS) - before)
    for name in sorted(names):
        FLAGS.register_key_flag_for_module(sys.argv[0], FLAGS[name])

    def app_main(argv):
        if len(argv) > 1:
            raise app.UsageError(
                f"unexpected arguments: {' '.join(argv[1:])}", exitcode=2)
        if not FLAGS["verbosity"].present:
            # absl would log at INFO: TensorFlow's notices on every save.
            logging.set_verbosity(logging.WARNING)
        try:
            for name in required:
                if FLAGS[name].value is None:
                    raise UserError(f"--{name} is required")
            if check is not None:
                check()
        except (ValueError, OSError) as error:
            report_error(error, parameters=names)
            sys.exit(2)
        config = None if callable(specs) else parsed_config(specs)
        try:
            status = _resolve(body)(config)
        except user_errors as error:
            report_error(error, parameters=names)
            status = 2
        sys.exit(status)

    app.run(app_main, flags_parser=_parse_flags)
