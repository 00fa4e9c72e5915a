"""Running a task's whole lifecycle in this process, and small real data."""

import contextlib

import keras
import pytest
from absl import flags

from tfbert.data import glue as glue_data
from tfbert.tasks import runner
from tfbert_cli import task_flags
from tfbert_cli.errors import UserError, report_error


def parse_task_flags(task_class, argv):
    """A task instance for `argv`, made as the command line makes it: the
    flags parsed in a fresh `FlagValues`, the checks on which were given
    (`UserError`), then the task's config."""
    flag_values = flags.FlagValues()
    task_flags.define_flags(task_class.program, flag_values)
    flag_values(["test", *map(str, argv)])
    task_flags.check_given(flag_values, task_class.program)
    return task_class(task_class.program.config(flag_values))


def run_program(task_class, argv):
    """`runner.run` of `argv`'s task as its program runs it (parameters
    named as flags), returning its exit status; a refusal of
    `parse_task_flags` is reported as the program reports it (one line,
    status 2)."""
    try:
        task = parse_task_flags(task_class, argv)
    except UserError as error:
        report_error(error, parameters=task_class.program.flag_names)
        return 2
    return runner.run(task, command_line=True)


def run_task(task_class, argv):
    """Runs the lifecycle in this process; returns `(task, prepared)` (the
    latter holds the trained model and the strategy). Errors propagate."""
    task = parse_task_flags(task_class, argv)
    try:
        with contextlib.ExitStack() as stack:
            prepared = runner.prepare(task, stack)
            runner.execute(task, prepared)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return task, prepared


def assert_runs_without_autotuning(dataset):
    """The task hands Keras `dataset` through `prefetch_for_keras` (see its
    docstring for why)."""
    assert dataset.options().autotune.enabled is False


def write_glue_subset(shared_data_dir, task, out_dir, n_train=48, n_dev=24,
                      with_test=False):
    """Copies the first rows of a real GLUE task into OUT_DIR/<TASK>/ (no
    dev split with `n_dev=0`)."""
    spec = glue_data.get_task(task)
    target = out_dir / spec.directory
    target.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("dev", n_dev)):
        if not n:
            continue
        source = glue_data.split_path(shared_data_dir / "glue", task, split)
        lines = open(source, encoding="utf-8-sig").read().splitlines()
        keep = lines[: n + int(spec.has_header)]
        (target / f"{split}.tsv").write_text("\n".join(keep) + "\n",
                                              encoding="utf-8")
    if with_test:
        dev = glue_data.read_examples(target / "dev.tsv", spec)
        rows = ["index\tsentence"] + [f"{i}\t{e.text_a}"
                                      for i, e in enumerate(dev)]
        (target / "test.tsv").write_text("\n".join(rows) + "\n",
                                         encoding="utf-8")
    return out_dir


@pytest.fixture(scope="session")
def sst2_dir(shared_data_dir, tmp_path_factory):
    """48 train / 24 dev / 24 test rows of the real SST-2."""
    return write_glue_subset(shared_data_dir, "sst2",
                             tmp_path_factory.mktemp("glue"), with_test=True)


@pytest.fixture(scope="session")
def sst2_train_dir(shared_data_dir, tmp_path_factory):
    """The same 48 SST-2 training rows alone: a run without dev data does
    not evaluate after each epoch."""
    return write_glue_subset(shared_data_dir, "sst2",
                             tmp_path_factory.mktemp("glue_train"), n_dev=0)
