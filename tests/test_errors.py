"""`tfbert_cli.errors`: a message names parameters in backticks, written as
the user gave them: flags on the command line, config fields in Python."""

import pytest

from tfbert_cli.errors import render, report_error

PARAMETERS = {"init_checkpoint", "vocab_file", "model_dir", "do_train",
              "do_train_x"}
MESSAGE = ("`init_checkpoint`=DIR: no vocabulary; pass `vocab_file`; "
           "`model_dir`=X has no trained model; run with `do_train` first")


def test_command_line_names_flags():
    assert render(MESSAGE, PARAMETERS, command_line=True) == (
        "--init_checkpoint=DIR: no vocabulary; pass --vocab_file; "
        "--model_dir=X has no trained model; run with --do_train first")


def test_python_names_parameters():
    assert render(MESSAGE, PARAMETERS, command_line=False) == (
        "init_checkpoint=DIR: no vocabulary; pass vocab_file; "
        "model_dir=X has no trained model; run with do_train first")


@pytest.mark.parametrize("command_line", [True, False])
def test_other_backticked_text_is_left_alone(command_line):
    message = ("a pair task reads `text ||| text` lines; `units` and "
               "`Model.compile` are no parameters; nor is `` or `-x`")
    assert render(message, PARAMETERS, command_line) == message
    # A parameter of another config is no parameter here.
    assert render("`seed`=3", PARAMETERS, command_line) == "`seed`=3"
    assert render("`seed`=3", (), command_line) == "`seed`=3"


@pytest.mark.parametrize("command_line, flag", [(True, "--"), (False, "")])
def test_a_name_is_a_whole_backticked_word(command_line, flag):
    # `do_train` is a prefix of `do_train_x`, and both are parameters.
    assert render("`do_train` or `do_train_x`", PARAMETERS, command_line) == (
        f"{flag}do_train or {flag}do_train_x")
    # A prefix of a parameter is not that parameter, nor its extension.
    assert render("`do_tr` and `do_train_xy`", PARAMETERS, command_line) == (
        "`do_tr` and `do_train_xy`")
    # Only backticked names: the plain words stay, as does `--name`.
    assert render("do_train `--do_train`", PARAMETERS, command_line) == (
        "do_train `--do_train`")


def test_a_rendered_message_renders_no_further():
    once = render(MESSAGE, PARAMETERS, command_line=True)
    assert render(once, PARAMETERS, command_line=True) == once


def test_report_error_renders_one_line(capsys):
    error = ValueError("`model_dir`=X has no trained model;\n run with "
                       "`do_train` first")
    report_error(error, parameters=PARAMETERS)
    report_error(error, parameters=PARAMETERS, command_line=False)
    report_error(error)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 2)[1:] for line in lines] == [
        ["error", "--model_dir=X has no trained model; run with --do_train "
                  "first"],
        ["error", "model_dir=X has no trained model; run with do_train "
                  "first"],
        ["error", "`model_dir`=X has no trained model; run with `do_train` "
                  "first"]]
