"""Distribution strategies and mixed precision through `train`."""

import json
import os
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert import BertConfig, BertEncoder
from tfbert.models import BertClassifier
from tfbert.training import TrainingConfig, set_mixed_precision, train

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_tiny.py")
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO)


def _train(tmp_path, name, *args, env=None):
    output = tmp_path / f"{name}.json"
    return subprocess.Popen(
        [sys.executable, SCRIPT, f"--model_dir={tmp_path / name}",
         f"--output={output}", *args],
        env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True), output


def _finish(process, output):
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-4000:]
    return json.loads(output.read_text()) if output.exists() else None


@pytest.fixture(scope="module")
def one_device(tmp_path_factory):
    """The one-device baseline both strategy tests compare with (the same
    run, with the same flags, so it is trained once)."""
    return _finish(*_train(tmp_path_factory.mktemp("baseline"), "one",
                           "--strategy=one_device"))


@pytest.mark.slow
def test_mirrored_on_two_cpus_matches_one_device(tmp_path, one_device):
    one = one_device
    mirrored = _finish(*_train(tmp_path, "mirrored", "--strategy=mirrored",
                               "--num_cpus=2"))
    assert one["replicas"] == 1 and mirrored["replicas"] == 2
    assert len(one["loss"]) == len(mirrored["loss"]) == 8
    np.testing.assert_allclose(mirrored["loss"], one["loss"], rtol=1e-4)
    assert one["loss"][-1] < one["loss"][0]
    np.testing.assert_allclose(mirrored["distributed_logits"],
                               one["local_logits"], atol=1e-5)


def free_ports(count):
    """Loopback ports free right now, for a local multi-worker cluster."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def multi_worker_envs(num_workers):
    """One environment per worker process, with `TF_CONFIG` on loopback."""
    workers = [f"127.0.0.1:{port}" for port in free_ports(num_workers)]
    return [dict(ENV, TF_CONFIG=json.dumps({
        "cluster": {"worker": workers},
        "task": {"type": "worker", "index": index}}))
        for index in range(num_workers)]


@pytest.mark.slow
def test_two_local_workers_match_one_device(tmp_path, one_device):
    one = one_device
    workers = [_train(tmp_path, "multi", "--strategy=multi_worker_mirrored",
                      env=env) for env in multi_worker_envs(2)]
    results = [_finish(*worker) for worker in workers]
    chief = results[0]
    assert chief["replicas"] == 2
    np.testing.assert_allclose(chief["loss"], one["loss"], rtol=1e-4)
    assert np.shape(chief["distributed_logits"]) == (60, 2)
    np.testing.assert_allclose(chief["distributed_logits"],
                               chief["local_logits"], atol=1e-6)
    np.testing.assert_allclose(chief["local_logits"], one["local_logits"],
                               atol=1e-5)
    # The chief writes the checkpoints the run resumes from; the other
    # worker saves too (saving is collective), into a directory of its own.
    assert (tmp_path / "multi" / "checkpoints" / "checkpoint").exists()
    assert (tmp_path / "multi" / "worker_tmp" / "1" / "checkpoints" /
            "checkpoint").exists()


@pytest.fixture
def policy():
    yield set_mixed_precision
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.slow
def test_mixed_precision_training_is_finite(tmp_path, policy, name):
    policy(name)
    keras.utils.set_random_seed(1)
    model = BertClassifier(BertEncoder(BertConfig(
        vocab_size=64, hidden_size=16, num_layers=2, num_heads=2,
        intermediate_size=32)), 2)
    ids = np.random.default_rng(0).integers(1, 64, (32, 10)).astype("int32")
    features = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                "input_type_ids": np.zeros_like(ids)}
    dataset = tf.data.Dataset.from_tensor_slices(
        (features, (ids[:, 0] > 32).astype("int32"))).batch(8)
    history = train(model, dataset, steps_per_epoch=4,
                    config=TrainingConfig(model_dir=str(tmp_path),
                                          num_train_epochs=1, verbose=0),
                    loss=keras.losses.SparseCategoricalCrossentropy(
                        from_logits=True))
    assert np.isfinite(history.history["loss"]).all()
    assert model(features).dtype == "float32"
    if name == "float16":
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert model.encoder.transformer_blocks[0].attention.query.compute_dtype == name
