"""A task is made from its config dataclass, in Python as on the command
line: the library never sees flags."""

import ast
import dataclasses
import importlib
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tfbert.tasks import runner
from tfbert.tasks.glue import GlueConfig, GlueTask

RUNNER_PROGRAMS = ("classify", "glue", "multiple_choice", "ner",
                   "pretraining", "sentence", "squad")


@pytest.mark.parametrize("name", RUNNER_PROGRAMS)
def test_config_defaults_are_the_command_lines(name):
    # What the program's user gets from absl with no flag given.
    from absl import flags

    from tfbert_cli import task_flags

    program = importlib.import_module(f"tfbert_cli.{name}").PROGRAM
    flag_values = flags.FlagValues()
    task_flags.define_flags(program, flag_values)
    flag_values(["test"])
    config = program.config_class()
    assert program.flag_names == set(flag_values)
    for flag in flag_values:
        assert getattr(config, flag) == flag_values[flag].value, flag
    assert program.config(flag_values) == config


def test_extraction_config_defaults_are_the_command_lines():
    from absl import flags

    from tfbert.tasks.extract_features import ExtractionConfig
    from tfbert_cli import extract_features, program

    flag_values = flags.FlagValues()
    program.define(flag_values, extract_features._FLAGS)
    flag_values(["test"])
    config = ExtractionConfig()
    assert {field.name for field in dataclasses.fields(config)} == set(
        flag_values)
    for flag in flag_values:
        assert getattr(config, flag) == flag_values[flag].value, flag


def test_glue_task_from_python(capsys, tmp_path, tiny_checkpoint):
    # A notebook's run, no flags: the missing training file is named.
    config = GlueConfig(task="sst2", data_dir=str(tmp_path / "data"),
                        init_checkpoint=str(tiny_checkpoint),
                        model_dir=str(tmp_path / "model"), do_train=True)
    assert config.max_seq_length == 128 and not config.do_predict
    assert runner.run(GlueTask(config)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert str(tmp_path / "data" / "SST-2" / "train.tsv") in err, err
    assert not (tmp_path / "model").exists()


def _program_error(tmp_path, *argv):
    """The stderr of `python -m tasks.glue ARGV` (which must exit with 2) as
    one line."""
    result = subprocess.run(
        [sys.executable, "-m", "tasks.glue", *map(str, argv)],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT),
                 TF_CPP_MIN_LOG_LEVEL="3"))
    # TensorFlow's start may log before the error: the program's line ends.
    lines = [line for line in result.stderr.splitlines()
             if line.startswith("glue: ")]
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


def test_python_names_parameters_and_the_command_line_flags(
        capsys, tmp_path, tiny_checkpoint):
    # The same mistake in a check of values (before TensorFlow starts).
    config = GlueConfig(task="sst2", data_dir=str(tmp_path),
                        init_checkpoint=str(tiny_checkpoint),
                        model_dir=str(tmp_path / "model"), do_train=True,
                        train_batch_size=0)
    assert runner.run(GlueTask(config)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "error: train_batch_size must be positive, got 0" in err, err
    assert "--" not in err and "`" not in err, err
    line = _program_error(
        tmp_path, "--task=sst2", f"--data_dir={tmp_path}",
        f"--model_dir={tmp_path / 'model'}", "--do_train",
        "--train_batch_size=0")
    assert line == "glue: error: --train_batch_size must be positive, got 0"
    assert not (tmp_path / "model").exists()


def test_runner_names_parameters_from_python_and_flags_from_the_command_line(
        capsys, tmp_path, tiny_checkpoint, sst2_dir):
    # Found by the runner in a model directory that has no trained model.
    model_dir = tmp_path / "model"
    config = GlueConfig(task="sst2", data_dir=str(sst2_dir),
                        init_checkpoint=str(tiny_checkpoint),
                        model_dir=str(model_dir), do_eval=True)
    assert runner.run(GlueTask(config)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.endswith(f"error: model_dir={model_dir} has no trained model; "
                        "run with do_train first"), err
    assert "--" not in err and "`" not in err, err
    line = _program_error(
        tmp_path, "--task=sst2", f"--data_dir={sst2_dir}",
        f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={model_dir}",
        "--do_eval")
    assert line == (f"glue: error: --model_dir={model_dir} has no trained "
                    "model; run with --do_train first")
    assert not model_dir.exists()


def test_tasks_never_import_absl():
    for path in sorted((REPO_ROOT / "tfbert" / "tasks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] == "absl" for n in names), path


def test_task_programs_specs_import_no_absl():
    # What tfbert.tasks imports of tfbert_cli: absl only comes with `main`.
    modules = ", ".join(f"tfbert_cli.{name}" for name in (
        *RUNNER_PROGRAMS, "extract_features"))
    code = (f"import sys, {modules}\n"
            "assert 'absl' not in sys.modules, 'absl imported'")
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True,
        timeout=60, cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert result.returncode == 0, result.stderr[-2000:]
