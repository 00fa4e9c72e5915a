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
from tfbert.training import (
    TrainingConfig, restore_best_weights, set_mixed_precision, train)

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


@pytest.fixture
def policy():
    yield set_mixed_precision
    keras.mixed_precision.set_global_policy("float32")


def _tiny_classifier(vocab_size=64, dropout=0.0, seed=1):
    keras.utils.set_random_seed(seed)
    return BertClassifier(BertEncoder(BertConfig(
        vocab_size=vocab_size, hidden_size=16, num_layers=2, num_heads=2,
        intermediate_size=32, hidden_dropout=dropout,
        attention_dropout=dropout)), 2, dropout=dropout)


def _examples(count=32, vocab_size=64):
    ids = np.random.default_rng(0).integers(1, vocab_size, (count, 10)).astype("int32")
    features = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                "input_type_ids": np.zeros_like(ids)}
    return features, (ids[:, 0] > vocab_size // 2).astype("int32")


def _fit(model, model_dir, batch_size=8, epochs=1, **kwargs):
    features, labels = _examples()
    dataset = tf.data.Dataset.from_tensor_slices(
        (features, labels)).batch(batch_size)
    train_kwargs = {name: kwargs.pop(name) for name in
                    ("evaluate_fn", "best_metric", "callbacks") if name in kwargs}
    config = TrainingConfig(model_dir=str(model_dir), num_train_epochs=epochs,
                            learning_rate=1e-3, warmup_proportion=0.25,
                            verbose=0, **kwargs)
    return train(model, dataset, steps_per_epoch=32 // batch_size,
                 config=config,
                 loss=keras.losses.SparseCategoricalCrossentropy(
                     from_logits=True), **train_kwargs)


def _assert_same_weights(a, b, **tolerance):
    assert len(a.weights) == len(b.weights)
    for x, y in zip(a.weights, b.weights):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), **tolerance)


@pytest.mark.slow
def test_best_weights_hold_inference_weights_only(tmp_path):
    # A large embedding table so the parameters dominate the HDF5 overhead.
    model = _tiny_classifier(vocab_size=4000)
    evaluations = []

    def evaluate():
        evaluations.append([np.array(w) for w in model.weights])
        return {"accuracy": [0.5, 0.75, 0.6][len(evaluations) - 1]}

    _fit(model, tmp_path, epochs=3, evaluate_fn=evaluate,
         best_metric="accuracy")
    assert json.loads((tmp_path / "best_metrics.json").read_text()) == {
        "accuracy": 0.75}
    parameter_bytes = sum(w.numpy().nbytes for w in model.weights)
    bound = 1.1 * parameter_bytes + 4096 * len(model.weights)
    assert os.path.getsize(tmp_path / "best.weights.h5") <= bound
    # What Keras' save_weights writes for the same compiled model (with the
    # AdamW slots) is far above the bound.
    model.save_weights(tmp_path / "with_optimizer.weights.h5")
    assert os.path.getsize(tmp_path / "with_optimizer.weights.h5") > 2 * bound
    assert [p for p in os.listdir(tmp_path) if ".tmp-" in p] == []

    # The best epoch's weights come back into a fresh model and into the
    # compiled one (whose optimizer is left alone).
    fresh = _tiny_classifier(vocab_size=4000, seed=2)
    fresh(_examples(vocab_size=4000)[0])
    assert restore_best_weights(fresh, tmp_path)
    for got, want in zip(fresh.weights, evaluations[1]):
        np.testing.assert_array_equal(np.asarray(got), want)
    iterations = int(model.optimizer.iterations)
    assert restore_best_weights(model, tmp_path)
    assert int(model.optimizer.iterations) == iterations
    for got, want in zip(model.weights, evaluations[1]):
        np.testing.assert_array_equal(np.asarray(got), want)
    assert not restore_best_weights(fresh, tmp_path / "elsewhere")


@pytest.mark.slow
def test_dev_metrics_go_to_tensorboard(tmp_path):
    scores = iter([{"accuracy": np.float32(0.25), "f1": 0.5},
                   {"accuracy": tf.constant(0.75), "f1": 0.0}])
    _fit(_tiny_classifier(), tmp_path, epochs=2, evaluate_fn=lambda: next(scores))
    logged = {}
    for event_file in tf.io.gfile.glob(str(tmp_path / "logs" / "dev" / "*")):
        for event in tf.compat.v1.train.summary_iterator(event_file):
            for value in event.summary.value:
                logged[(value.tag, event.step)] = float(
                    tf.make_ndarray(value.tensor))
    assert logged == {("dev/accuracy", 4): 0.25, ("dev/f1", 4): 0.5,
                      ("dev/accuracy", 8): 0.75, ("dev/f1", 8): 0.0}


def test_corrupt_best_metrics_is_named_before_training(tmp_path):
    (tmp_path / "best_metrics.json").write_text('{"accuracy": 0.7')
    with pytest.raises(ValueError, match="best_metrics.json:1: not valid JSON"):
        _fit(_tiny_classifier(), tmp_path, evaluate_fn=lambda: {"accuracy": 1},
             best_metric="accuracy")
    assert not (tmp_path / "checkpoints").exists()


def test_checkpoint_steps_sets_the_checkpoint_interval(tmp_path):
    _fit(_tiny_classifier(), tmp_path, epochs=2, checkpoint_steps=2)
    state = tf.train.get_checkpoint_state(str(tmp_path / "checkpoints"))
    # 8 batches in chunks of 2: checkpoints 1..4, the last two kept.
    kept = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
    assert kept == ["ckpt-3", "ckpt-4"]
    for path in state.all_model_checkpoint_paths:
        number = int(path.rsplit("-", 1)[1])
        batches = tf.train.load_variable(
            path, "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")
        assert batches == 2 * number


@pytest.mark.slow
@pytest.mark.parametrize("option", [{"steps_per_execution": 2},
                                    {"jit_compile": True}])
def test_steps_per_execution_and_jit_compile_train_the_same(tmp_path, option):
    default = _tiny_classifier()
    default_history = _fit(default, tmp_path / "default")
    other = _tiny_classifier()
    history = _fit(other, tmp_path / "other", **option)
    np.testing.assert_allclose(history.history["loss"],
                               default_history.history["loss"], rtol=1e-5)
    _assert_same_weights(other, default, rtol=1e-4, atol=1e-6)


def test_fit_reads_the_training_data_through_one_iterator(tmp_path):
    # Keras builds a model that remembers its strategy from a batch of a
    # first iterator, whose prefetching then races the training iterator
    # for the shuffle seeds: `train` must not let that iterator exist, so
    # nothing is read before training starts.
    read_before_training = []
    produced = []

    def count(features, labels):
        tick = tf.py_function(lambda: produced.append(1) or 0, [], tf.int32)
        with tf.control_dependencies([tick]):
            return tf.nest.map_structure(tf.identity, (features, labels))

    class Probe(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            read_before_training.append(len(produced))

    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = _tiny_classifier()
    features, labels = _examples()
    dataset = tf.data.Dataset.from_tensor_slices(
        (features, labels)).batch(8).map(count)
    train(model, dataset, steps_per_epoch=4,
          config=TrainingConfig(model_dir=str(tmp_path), num_train_epochs=1,
                                learning_rate=1e-3, verbose=0),
          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
          strategy=strategy, callbacks=[Probe()])
    assert read_before_training == [0]
    assert produced, "the probe saw no batch at all"
    assert model._distribute_strategy is strategy


def test_gradient_accumulation_equals_the_large_batch(tmp_path):
    """Two accumulated batches of 8 per update are one batch of 16: the same
    mean gradient, the same clipping, decay and warmup/decay schedule."""
    large = _tiny_classifier()
    _fit(large, tmp_path / "large", batch_size=16, epochs=3)
    accumulated = _tiny_classifier()
    _fit(accumulated, tmp_path / "accumulated", batch_size=8, epochs=3,
         gradient_accumulation_steps=2)
    assert int(accumulated.optimizer.iterations) == int(large.optimizer.iterations) == 6
    _assert_same_weights(accumulated, large, rtol=1e-4, atol=1e-6)
    # The schedule reached zero at the last update in both runs.
    assert float(accumulated.optimizer.learning_rate) == 0.0


@pytest.mark.slow
def test_seed_alone_sets_the_dropout_streams(tmp_path):
    first = _tiny_classifier(dropout=0.3)
    # Built under another global seed: other initial dropout seeds (the
    # weights are then made equal).
    second = _tiny_classifier(dropout=0.3, seed=2)
    second.set_weights(first.get_weights())
    third = _tiny_classifier(dropout=0.3, seed=3)
    third.set_weights(first.get_weights())
    _fit(first, tmp_path / "first", seed=5)
    _fit(second, tmp_path / "second", seed=5)
    _fit(third, tmp_path / "third", seed=6)
    _assert_same_weights(first, second, rtol=0, atol=0)
    assert any(not np.array_equal(np.asarray(a), np.asarray(b))
               for a, b in zip(first.weights, third.weights))


@pytest.mark.parametrize("field, value", [
    ("num_train_epochs", 0), ("learning_rate", -1e-5),
    ("gradient_accumulation_steps", 0), ("steps_per_execution", 0),
    ("checkpoint_steps", 0), ("warmup_proportion", 1.5)])
def test_config_refuses_values_that_cannot_train(tmp_path, field, value):
    with pytest.raises(ValueError, match=f"--{field} must be"):
        TrainingConfig(model_dir=str(tmp_path), **{field: value})


class _Crash(keras.callbacks.Callback):
    """Stops the process's training one batch after the first checkpoint,
    as a crash would (that batch's progress is lost)."""

    batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        if self.batches == 4:  # The first checkpoint is after batch 3.
            raise KeyboardInterrupt


@pytest.mark.slow
@pytest.mark.parametrize("precision, config", [
    ("float16", {}),
    # A checkpoint in the middle of an accumulation.
    ("none", {"gradient_accumulation_steps": 2})])
def test_resume_restores_all_optimizer_state(tmp_path, policy, precision,
                                             config):
    """In-process twin of the kill -9 test, for state only some
    configurations have: a `LossScaleOptimizer` around the optimizer, the
    gradient accumulators."""
    policy(precision)
    straight = _tiny_classifier(dropout=0.1)
    _fit(straight, tmp_path / "straight", epochs=2, checkpoint_steps=3,
         **config)
    crashed = _tiny_classifier(dropout=0.1)
    with pytest.raises(KeyboardInterrupt):
        _fit(crashed, tmp_path / "resumed", epochs=2, checkpoint_steps=3,
             callbacks=[_Crash()], **config)
    resumed = _tiny_classifier(dropout=0.1)
    _fit(resumed, tmp_path / "resumed", epochs=2, checkpoint_steps=3, **config)
    _assert_same_weights(resumed, straight, rtol=0, atol=0)
