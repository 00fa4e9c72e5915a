"""Every program answers --help and refuses a bad flag before TensorFlow is
imported: each runs here in a process where `import tensorflow` raises
ImportError."""

import importlib
import os
import re
import subprocess
import sys

import pytest
from absl import flags

from tests.conftest import REPO_ROOT
from tfbert_cli import program, task_flags

# Runs argv[1]'s console-script function ("module:function") as the program
# argv[2] with the remaining arguments, TensorFlow unimportable.
WITHOUT_TENSORFLOW = """
import importlib, sys
sys.modules["tensorflow"] = None  # `import tensorflow` raises ImportError.
module, function = sys.argv[1].split(":")
sys.argv = sys.argv[2:]
sys.exit(getattr(importlib.import_module(module), function)())
"""


def console_scripts():
    """`(name, "module:function")` of every console script in setup.py."""
    setup = re.sub(r'"\s+"', "", (REPO_ROOT / "setup.py").read_text(
        encoding="utf-8"))
    return re.findall(r'"([\w-]+) = ([\w.]+:\w+)"', setup)


def run_without_tensorflow(entry_point, name, *args):
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_TENSORFLOW, entry_point, name, *args],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))


def own_flags(module):
    """The names of the flags `module`'s program defines."""
    fv = flags.FlagValues()
    if hasattr(module, "PROGRAM"):
        task_flags.define_flags(module.PROGRAM, fv)
    else:
        program.define(fv, getattr(module, "_FLAGS", ()))
    return set(fv)


ENTRY_POINTS = dict(console_scripts())


def test_every_program_is_a_launcher():
    """Each console script and its `python -m tasks.X` shim run the same
    `tfbert_cli` function."""
    assert len(ENTRY_POINTS) == 14
    shims = {path.stem for path in (REPO_ROOT / "tasks").glob("*.py")
             if path.stem != "__init__"}
    launchers = {}
    for name, entry_point in ENTRY_POINTS.items():
        module, function = entry_point.split(":")
        assert module.startswith("tfbert_cli."), entry_point
        launchers[module.removeprefix("tfbert_cli.")] = getattr(
            importlib.import_module(module), function)
    launchers["query_saved_model"] = launchers["query"]
    for shim in shims:
        assert importlib.import_module(f"tasks.{shim}").main is (
            launchers[shim]), shim


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_help_without_tensorflow(name):
    result = run_without_tensorflow(ENTRY_POINTS[name], name, "--help")
    assert result.returncode == 0, result.stderr[-2000:]
    module = importlib.import_module(ENTRY_POINTS[name].split(":")[0])
    names = own_flags(module) or {"help"}
    if name == "tfbert-query":
        names = {"signature"}
    missing = [n for n in names if f"--{n}" not in result.stdout
               and f"--[no]{n}" not in result.stdout]
    assert not missing, result.stdout


@pytest.mark.parametrize("name, args, expected", [
    ("tfbert-glue", ["--task=sst2", "--data_dir=d", "--model_dir=m",
                     "--do_train", "--learning_rate=-1"],
     "--learning_rate must be in (0, 1], got -1.0"),
    ("tfbert-glue", ["--task=sst3"], "flag --task=sst3: value should be one "
     "of <cola|mnli|mrpc|qnli|qqp|rte|sst2|stsb|wnli>"),
    ("tfbert-squad", ["--do_train", "--doc_stride=0", "--model_dir=m"],
     "--doc_stride must be positive, got 0"),
    ("tfbert-classify", ["--do_train", "--train_file=t.csv", "--model_dir=m",
                         "--regression", "--multi_label"],
     "--regression and --multi_label exclude each other"),
    ("tfbert-ner", ["--do_train", "--model_dir=m", "--tag_column=0"],
     "--tag_column must be >= 1"),
    ("tfbert-sentence", ["--do_eval", "--model_dir=m"],
     "--do_eval needs --eval_file"),
    ("tfbert-pretrain", ["--do_train", "--model_dir=m",
                         "--masked_lm_prob=1.5"], "--masked_lm_prob"),
    ("tfbert-multiple-choice", ["--do_train", "--model_dir=m",
                                "--num_choices=1"], "--num_choices"),
    ("tfbert-convert", ["--input=x"], "--output_dir is required"),
    ("tfbert-squad-choices", ["--squad_file=s", "--output_dir=o",
                              "--num_choices=1"], "--num_choices"),
    ("tfbert-squad-choices", ["--squad_file=/no/such.json", "--output_dir=o"],
     "/no/such.json: No such file or directory"),
    ("tfbert-extract-features", ["--input_file=/no/such.txt",
                                 "--output_file=o.jsonl"],
     "/no/such.txt: no such file"),
    ("tfbert-extract-features", ["--input_file=/", "--output_file=o.jsonl"],
     "/: is a directory, expected a file of texts"),
    ("tfbert-export-tfhub", ["--init_checkpoint=x"],
     "give --encoder_export_dir, --preprocessor_export_dir or "
     "--text_embedding_export_dir"),
    ("tfbert-export-tfhub", ["--init_checkpoint=x",
                             "--preprocessor_export_dir=p", "--seq_length=1"],
     "--seq_length=1: must be >= 2"),
    ("tfbert-query", ["/no/such/export"], "no such file or directory"),
])
def test_refused_flag_without_tensorflow(tmp_path, name, args, expected):
    result = run_without_tensorflow(ENTRY_POINTS[name], name, *args)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr == f"{name}: error: {expected}\n" or (
        len(result.stderr.splitlines()) == 1
        and result.stderr.startswith(f"{name}: error: ")
        and expected in result.stderr), result.stderr


def test_a_valid_command_line_goes_on_to_import_tensorflow(tmp_path):
    """The checks above pass a good command line on: without TensorFlow it
    then fails at the import (which a refused flag never reaches)."""
    result = run_without_tensorflow(
        ENTRY_POINTS["tfbert-glue"], "tfbert-glue", "--task=sst2",
        f"--data_dir={tmp_path}", f"--model_dir={tmp_path / 'm'}",
        "--do_train")
    assert result.returncode == 1
    assert "import of tensorflow halted" in result.stderr


def test_the_programs_enums_are_the_library_s():
    """Enum values the programs list without importing the library."""
    from tfbert import families
    from tfbert.data import glue as glue_data
    from tfbert.data import tag_schemes
    from tfbert.tasks import sentence
    from tfbert_cli import convert_checkpoint, glue, ner
    from tfbert_cli import sentence as sentence_program

    assert glue.TASK_NAMES == tuple(sorted(glue_data.TASKS))
    assert glue.PAIR_TASK_NAMES == tuple(sorted(
        name for name, task in glue_data.TASKS.items() if task.is_pair))
    assert ner.TAG_SCHEMES == tag_schemes.SCHEMES
    assert sentence_program.LOSS_NAMES == tuple(sorted(sentence.LOSSES))
    assert convert_checkpoint.FORMATS == families.FORMATS
