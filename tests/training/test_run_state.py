"""Model-dir fingerprints, clearing and locking."""

import hashlib
import json
import logging
import os
import signal
import subprocess
import sys

import pytest

from tfbert.training.run_state import (
    ModelDirLock, ModelDirLockedError, ModelDirMismatchError,
    check_fingerprint, clear_training_state, file_fingerprint)


def test_file_fingerprint_is_size_and_sha256(tmp_path):
    data = b"the quick brown fox\n" * 1000
    (tmp_path / "train.tsv").write_bytes(data)
    assert file_fingerprint(tmp_path / "train.tsv") == {
        "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_file_fingerprint_of_a_glob_and_a_dir_covers_each_file(tmp_path):
    for name, text in [("a.tfrecord", b"1"), ("b.tfrecord", b"22"),
                       ("notes.txt", b"333")]:
        (tmp_path / name).write_bytes(text)
    by_glob = file_fingerprint(str(tmp_path / "*.tfrecord"))
    assert sorted(by_glob) == [str(tmp_path / "a.tfrecord"),
                               str(tmp_path / "b.tfrecord")]
    assert by_glob[str(tmp_path / "b.tfrecord")]["size"] == 2
    assert len(file_fingerprint(tmp_path)) == 3
    with pytest.raises(FileNotFoundError, match="nothing|no such"):
        file_fingerprint(str(tmp_path / "*.json"))


def test_first_run_records_and_same_run_passes(tmp_path):
    fingerprint = {"learning_rate": 2e-5, "train_file": {"size": 3}}
    check_fingerprint(tmp_path / "run", fingerprint)
    assert json.loads((tmp_path / "run" / "run_fingerprint.json").read_text()) \
        == fingerprint
    check_fingerprint(tmp_path / "run", dict(fingerprint))


def test_changed_run_is_refused_naming_each_change(tmp_path):
    check_fingerprint(tmp_path, {"learning_rate": 2e-5, "epochs": 3,
                                 "train_file": {"size": 3, "sha256": "aa"}})
    with pytest.raises(ModelDirMismatchError) as info:
        check_fingerprint(tmp_path, {"learning_rate": 3e-5, "epochs": 3,
                                     "train_file": {"size": 4, "sha256": "bb"},
                                     "seed": 1})
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "\n" not in message
    assert "learning_rate: 2e-05 -> 3e-05" in message
    assert 'train_file: {"sha256": "aa", "size": 3} -> ' in message
    assert "seed: <unset> -> 1" in message and "epochs" not in message
    # The parameters, in backticks (`tfbert_cli.errors.render`).
    assert "`overwrite_model_dir`" in message and "`model_dir`" in message


def test_a_flag_key_is_named_as_its_parameter(tmp_path):
    # The runner keys its parameters as flags ("--seed"), as fingerprints
    # have always been written; a message names them in backticks, for
    # the runner to report as a flag or a config field.
    check_fingerprint(tmp_path, {"--seed": 1, "data": {}})
    with pytest.raises(ModelDirMismatchError) as info:
        check_fingerprint(tmp_path, {"--seed": 2, "data": {}})
    assert "(`seed`: 1 -> 2)" in str(info.value)
    assert json.loads((tmp_path / "run_fingerprint.json").read_text()) == {
        "--seed": 1, "data": {}}


def test_clear_training_state_keeps_everything_else(tmp_path):
    for name in ["checkpoints/ckpt-1.index", "logs/train/events",
                 "worker_tmp/1/checkpoints/x"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    for name in ["best.weights.h5", "best_metrics.json",
                 "run_fingerprint.json", "eval_results.json", "notes.md"]:
        (tmp_path / name).write_text("x")
    (tmp_path / "export" / "1").mkdir(parents=True)
    clear_training_state(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["eval_results.json", "export",
                                            "notes.md"]


HOLDER = """
import sys
from tfbert.training.run_state import ModelDirLock
with ModelDirLock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.read()
"""


def _hold_lock(model_dir):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(model_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert holder.stdout.readline().strip() == "locked"
    return holder


@pytest.mark.slow
def test_second_process_is_refused_then_a_dead_holders_lock_is_taken(
        tmp_path, caplog):
    holder = _hold_lock(tmp_path)
    try:
        with pytest.raises(ModelDirLockedError) as info:
            with ModelDirLock(tmp_path):
                pass
        assert f"in use by process {holder.pid}" in str(info.value)
        assert str(tmp_path) in str(info.value)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # kill -9 left the lock file behind with the dead PID in it.
    assert (tmp_path / ".lock").read_text().strip() == str(holder.pid)
    with caplog.at_level(logging.WARNING):
        with ModelDirLock(tmp_path):
            assert (tmp_path / ".lock").read_text().strip() == str(os.getpid())
    assert f"left by process {holder.pid}" in caplog.text
    assert not (tmp_path / ".lock").exists()


def test_lock_is_released_when_the_block_raises(tmp_path):
    with pytest.raises(RuntimeError):
        with ModelDirLock(tmp_path):
            raise RuntimeError("training failed")
    assert not (tmp_path / ".lock").exists()
    with ModelDirLock(tmp_path):
        with pytest.raises(ModelDirLockedError):
            with ModelDirLock(tmp_path):
                pass


def test_a_dir_with_checkpoints_but_no_fingerprint_is_refused(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "export").mkdir()
    with pytest.raises(ModelDirMismatchError,
                       match="holds checkpoints of a run without"):
        check_fingerprint(tmp_path, {"seed": 1})
    clear_training_state(tmp_path)
    check_fingerprint(tmp_path, {"seed": 1})
