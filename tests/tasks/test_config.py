"""A task is made from its config dataclass, in Python as on the command
line: the library never sees flags."""

import ast
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
    modules = ", ".join(f"tfbert_cli.{name}" for name in RUNNER_PROGRAMS)
    code = (f"import sys, {modules}\n"
            "assert 'absl' not in sys.modules, 'absl imported'")
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True,
        timeout=60, cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert result.returncode == 0, result.stderr[-2000:]
