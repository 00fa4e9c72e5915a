"""`train`: exact resume, best-model files, dev metrics in TensorBoard, and
the configuration knobs it must honour."""

import errno
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
    TrainingConfig, TrainingDivergedError, create_optimizer,
    restore_best_weights, set_mixed_precision, train)
from tfbert.utils.atomic import StorageError
from tfbert_config.bounds import ParameterError

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
    kwargs.setdefault("verbose", 0)
    config = TrainingConfig(model_dir=str(model_dir), num_train_epochs=epochs,
                            learning_rate=1e-3, warmup_proportion=0.25,
                            **kwargs)
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


@pytest.fixture(scope="module")
def two_epoch_fit(tmp_path_factory):
    """Model dir of a 2-epoch `_fit` (8 batches) with a checkpoint every 2
    batches and a dev evaluation after each epoch (scores of both kinds
    `evaluate_fn` may return): read by the TensorBoard and the
    checkpoint-interval tests (one run for both)."""
    model_dir = tmp_path_factory.mktemp("two_epoch_fit")
    scores = iter([{"accuracy": np.float32(0.25), "f1": 0.5},
                   {"accuracy": tf.constant(0.75), "f1": 0.0}])
    _fit(_tiny_classifier(), model_dir, epochs=2, checkpoint_steps=2,
         evaluate_fn=lambda: next(scores))
    return model_dir


@pytest.mark.slow
def test_dev_metrics_go_to_tensorboard(two_epoch_fit):
    logged = {}
    for event_file in tf.io.gfile.glob(
            str(two_epoch_fit / "logs" / "dev" / "*")):
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


def test_checkpoint_steps_sets_the_checkpoint_interval(two_epoch_fit):
    state = tf.train.get_checkpoint_state(str(two_epoch_fit / "checkpoints"))
    # 8 batches in chunks of 2: checkpoints 1..4, the last two kept.
    kept = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
    assert kept == ["ckpt-3", "ckpt-4"]
    for path in state.all_model_checkpoint_paths:
        number = int(path.rsplit("-", 1)[1])
        batches = tf.train.load_variable(
            path, "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")
        assert batches == 2 * number


@pytest.fixture(scope="module")
def default_fit(tmp_path_factory):
    """(model, history) of `_fit` with the default options: the reference
    of every option that must train the same (trained once for all)."""
    model = _tiny_classifier()
    return model, _fit(model, tmp_path_factory.mktemp("default_fit"))


@pytest.mark.slow
@pytest.mark.parametrize("option", [{"steps_per_execution": 2},
                                    {"jit_compile": True}])
def test_steps_per_execution_and_jit_compile_train_the_same(tmp_path, option,
                                                            default_fit):
    default, default_history = default_fit
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
    ("num_train_epochs", 0), ("num_train_epochs", float("inf")),
    ("num_train_epochs", float("nan")), ("num_train_epochs", 1e12),
    ("learning_rate", -1e-5), ("learning_rate", float("inf")),
    ("learning_rate", float("nan")), ("learning_rate", 1e6),
    ("warmup_proportion", 1.5), ("warmup_proportion", float("nan")),
    ("weight_decay", float("inf")), ("weight_decay", -0.1),
    ("adam_epsilon", 0), ("adam_epsilon", float("inf")),
    ("layerwise_lr_decay", float("nan")), ("layerwise_lr_decay", 1.5),
    ("gradient_accumulation_steps", 0), ("steps_per_execution", 0),
    ("checkpoint_steps", 0)])
def test_config_refuses_values_that_cannot_train(tmp_path, field, value):
    # The library names its parameter; the task runner names the flag.
    with pytest.raises(ParameterError, match=f"^{field} must be") as info:
        TrainingConfig(model_dir=str(tmp_path), **{field: value})
    assert info.value.parameter == field


@pytest.mark.parametrize("argument, value", [
    ("learning_rate", float("inf")), ("learning_rate", float("nan")),
    ("clip_norm", float("inf")), ("clip_norm", 0.0)])
def test_optimizer_refuses_non_finite_rates_and_clip_norms(argument, value):
    arguments = {"learning_rate": 1e-3, "total_steps": 10, "warmup_steps": 1,
                 argument: value}
    with pytest.raises(ParameterError, match=f"^{argument} must be"):
        create_optimizer(**arguments)


def test_every_epoch_is_evaluated_and_shown_whatever_the_checkpoint_steps(
        tmp_path, capsys):
    # 2 epochs of 4 batches, chunks of 3: epoch ends (4, 8) fall inside
    # chunks, the last chunk is partial.
    model = _tiny_classifier()
    seen = []

    def evaluate():
        seen.append(int(model.optimizer.iterations))
        return {"accuracy": [0.5, 0.75][len(seen) - 1]}

    history = _fit(model, tmp_path, epochs=2, checkpoint_steps=3,
                   evaluate_fn=evaluate, best_metric="accuracy",
                   verbose="auto")
    assert seen == [4, 8]
    out = capsys.readouterr().out
    assert "training 8 steps (2 epochs of 4 steps" in out
    assert "a checkpoint every 3 steps" in out
    assert "eval after epoch 1 (step 4/8)" in out
    assert "eval after epoch 2 (step 8/8)" in out
    assert json.loads((tmp_path / "best_metrics.json").read_text()) == {
        "accuracy": 0.75}
    state = tf.train.get_checkpoint_state(str(tmp_path / "checkpoints"))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "ckpt-2", "ckpt-3"]

    # Standard output captured by pytest is not a terminal: plain lines in
    # real epochs and steps, not Keras' chunks ("Epoch 1/3").
    assert "\r" not in out and "\b" not in out and "Epoch" not in out
    lines = [line for line in out.splitlines() if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in lines] == [
        "epoch 1/2 step 4/8", "epoch 2/2 step 8/8"]
    # Each line's loss is its epoch's mean: together they make the mean of
    # Keras' chunk means (batches 1-3, 4-6, 7-8), weighted by batches.
    losses = [float(line.split("loss=")[1].split()[0]) for line in lines]
    chunk_means = history.history["loss"]
    assert len(chunk_means) == 3 and np.isfinite(losses).all()
    assert 4 * losses[0] + 4 * losses[1] == pytest.approx(
        3 * chunk_means[0] + 3 * chunk_means[1] + 2 * chunk_means[2],
        rel=1e-3)


class _PoisonLoss(keras.losses.Loss):
    """Cross-entropy, NaN from the `nan_from`-th call of the train step on."""

    def __init__(self, nan_from):
        super().__init__()
        self.calls = tf.Variable(0)
        self.nan_from = nan_from

    def call(self, y_true, y_pred):
        self.calls.assign_add(1)
        loss = keras.losses.sparse_categorical_crossentropy(
            y_true, y_pred, from_logits=True)
        return tf.where(self.calls >= self.nan_from, np.nan, loss)


def test_non_finite_loss_stops_at_its_step_keeping_the_last_checkpoint(
        tmp_path):
    model = _tiny_classifier()
    config = TrainingConfig(model_dir=str(tmp_path), num_train_epochs=2,
                            learning_rate=1e-3, checkpoint_steps=2,
                            verbose=0)
    features, labels = _examples()
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(8)
    with pytest.raises(TrainingDivergedError,
                       match=r"at step 5 of 8: the loss is nan; .*ckpt-2 "
                       r"\(step 4\) is the last checkpoint"):
        train(model, dataset, steps_per_epoch=4, config=config,
              loss=_PoisonLoss(nan_from=5))
    latest = tf.train.latest_checkpoint(str(tmp_path / "checkpoints"))
    assert latest.endswith("ckpt-2")
    reader = tf.train.load_checkpoint(latest)
    for name in reader.get_variable_to_shape_map():
        value = reader.get_tensor(name)
        if np.issubdtype(np.asarray(value).dtype, np.floating):
            assert np.isfinite(value).all(), name


def test_failed_checkpoint_write_leaves_no_partial_files(tmp_path,
                                                         monkeypatch):
    """A disk that fills while the second checkpoint is written: a one-line
    `StorageError` naming the directory and free space; the first checkpoint
    stays the latest and nothing of the second is left."""
    real_save = tf.train.CheckpointManager.save

    def fill_disk(manager, checkpoint_number=None, **kwargs):
        if checkpoint_number == 2:
            partial = os.path.join(manager.directory, "ckpt-2_temp")
            os.makedirs(partial)
            open(os.path.join(partial, "part-00000-of-00001.data"), "w").close()
            raise tf.errors.ResourceExhaustedError(
                None, None, f"{partial}/part-00000-of-00001.data-00000-of-"
                "00001.tempstate; No space left on device [Op:SaveV2]")
        return real_save(manager, checkpoint_number=checkpoint_number,
                         **kwargs)

    monkeypatch.setattr(tf.train.CheckpointManager, "save", fill_disk)
    with pytest.raises(StorageError, match="the disk is full") as info:
        _fit(_tiny_classifier(), tmp_path, epochs=1, checkpoint_steps=2)
    message = str(info.value)
    assert str(tmp_path / "checkpoints") in message and "MB free" in message
    assert info.value.errno == errno.ENOSPC
    assert sorted(os.listdir(tmp_path / "checkpoints")) == [
        "checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"]


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
