"""`train`: exact resume, best-model files, dev metrics in TensorBoard, and
the configuration knobs it must honour."""

import json
import os
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertConfig, BertEncoder
from tfbert.models import BertClassifier
from tfbert.training import TrainingConfig, restore_best_weights, train

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_tiny.py")
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO)
RESUME_ARGS = ["--dropout=0.1", "--shuffle", "--checkpoint_steps=2"]


def _run_tiny(model_dir, weights, *extra):
    return subprocess.Popen(
        [sys.executable, SCRIPT, f"--model_dir={model_dir}",
         f"--output={model_dir}.json", f"--weights_output={weights}",
         *RESUME_ARGS, *extra],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process):
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-4000:]
    return stdout


def _weights(path):
    with np.load(path) as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


@pytest.mark.slow
def test_killed_run_resumes_to_bitwise_identical_weights(tmp_path):
    _finish(_run_tiny(tmp_path / "straight", tmp_path / "straight.npz"))
    expected = _weights(tmp_path / "straight.npz")

    pause = tmp_path / "paused"
    killed = _run_tiny(tmp_path / "resumed", tmp_path / "unused.npz",
                       f"--pause_file={pause}")
    deadline = time.monotonic() + 300
    while not pause.exists():
        assert killed.poll() is None, killed.communicate()[1][-4000:]
        assert time.monotonic() < deadline, "no checkpoint within 300 s"
        time.sleep(0.2)
    # Killed one batch past its first checkpoint: that batch is lost.
    killed.send_signal(signal.SIGKILL)
    killed.communicate()
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "unused.npz").exists()

    stdout = _finish(_run_tiny(tmp_path / "resumed", tmp_path / "resumed.npz"))
    assert "Resuming from" in stdout and "2 of 8 batches done" in stdout
    resumed = _weights(tmp_path / "resumed.npz")
    assert len(resumed) == len(expected)
    for got, want in zip(resumed, expected):
        np.testing.assert_array_equal(got, want)
