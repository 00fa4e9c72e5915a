"""`train`: Keras `fit` with BERT's optimizer, resumable checkpoints and logs.

Training is cut into chunks of `checkpoint_steps` batches; Keras sees each
chunk as an "epoch". After every chunk the model, the optimizer (moments,
step, gradient accumulators, loss scale) and the dropout RNG state are written
with a `tf.train.CheckpointManager`. A run that is killed and started again
with the same arguments restores the last chunk and skips exactly the batches
it had consumed. Evaluation, best-model tracking and the progress output
count real epochs and steps (a step is one batch), whatever the chunk length.

Guarantees (each has a regression test in tests/training and tests/utils):

- Exact resume: a run killed at any point (even `kill -9`) and restarted with
  the same arguments ends with bitwise the same weights as an uninterrupted
  run (tested on CPU; on GPU, only as far as its kernels are deterministic).
  This holds because everything the trajectory depends on is either
  checkpointed (weights; every optimizer variable: step, moments, gradient
  accumulators, loss scale; dropout `SeedGenerator` states; batches
  consumed) or a function of the arguments (the data order, for a
  `train_dataset` shuffled with a fixed seed, which `fit` reads through one
  iterator; dropout seeds, from `TrainingConfig.seed`).
- Atomic writes: a checkpoint counts only once complete (TensorFlow
  replaces the `checkpoints/checkpoint` state file after writing the data);
  `best.weights.h5` and `best_metrics.json` are replaced whole (temp file +
  fsync + rename, `tfbert.utils.atomic`), weights first, never seen
  half-written; a full or read-only disk gives an `OSError` naming the file.
  `best.weights.h5` holds the inference weights only (no optimizer slots);
  `restore_best_weights` loads it. A damaged `best_metrics.json` stops the
  run before training, naming the file.
- Fingerprinted model dirs (`tfbert.training.run_state.check_fingerprint`):
  a model dir resumes only a run with the same flags and data; anything else
  is refused, naming what changed.
- Locking (`tfbert.training.run_state.ModelDirLock`): one process per model
  dir; a second one is refused, a lock left by a dead process is taken over.

The caller (the task runner) takes the lock and checks the fingerprint around
`train`:

    with ModelDirLock(model_dir):
        if overwrite_model_dir:
            clear_training_state(model_dir)
        check_fingerprint(model_dir, {"flags": ..., "train_file": file_fingerprint(path)})
        train(model, dataset, ...)
"""

import contextlib
import functools
import json
import math
import os

import keras
import numpy as np
import tensorflow as tf
from keras import tree

from tfbert.data.batching import without_autotuning
from tfbert.training.best_model import read_best_metrics, save_best
from tfbert.training.optimization import create_optimizer
from tfbert.training.progress import StepCounter, TrainingProgress
from tfbert.utils.atomic import storage_error
from tfbert.utils.finite import NonFiniteError, first_non_finite


class TrainingDivergedError(NonFiniteError):
    """The loss or the weights became NaN or infinite; training stopped
    before a checkpoint held them."""


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training; the message says what is saved."""


def is_chief(strategy):
    """Whether this process writes checkpoints and results (always, except on
    non-chief workers of a multi-worker strategy)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    cluster = resolver.cluster_spec().as_dict()
    return (resolver.task_type == "worker" and resolver.task_id == 0
            and "chief" not in cluster)


class _StopAfter(StepCounter):
    """Ends training after `total_batches` (chunks are `chunk` batches, so a
    fractional number of epochs ends inside the last one)."""

    def __init__(self, total_batches, chunk, initial_batches):
        super().__init__(chunk, initial_batches)
        self.total_batches = total_batches

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        if self.done >= self.total_batches:
            self.model.stop_training = True


class _ChunkCheckpoint(StepCounter):
    """Keeps the run's state and best model, whatever the chunk length.

    After every batch, a loss that is not finite stops training
    (`TrainingDivergedError`). At the end of every epoch (and of the run,
    whose last epoch may be partial), with `evaluate_fn`: evaluates; the
    metrics go to the log, to TensorBoard (`logs/dev`, tags `dev/<name>`,
    step = batches done) and, when `best_metric` improves (higher is
    better), to `best_metrics.json` beside `best.weights.h5`. After each
    chunk, saves the training state, last, so a restored chunk always has
    its evaluations written. Weights that are not finite are neither
    evaluated nor saved.

    Every worker of a multi-worker run saves (saving runs collective ops that
    need all of them), each into its own `output_dir`."""

    def __init__(self, trained_model, manager, progress, chunk,
                 steps_per_epoch, total_batches, initial_batches, evaluate_fn,
                 best_metric, best, output_dir):
        super().__init__(chunk, initial_batches)
        # The task model, whose best weights are kept (`self.model` is the
        # model `fit` runs, which may be a training form of it).
        self.trained_model = trained_model
        self.manager = manager
        self.progress = progress
        self.steps_per_epoch = steps_per_epoch
        self.total_batches = total_batches
        self.evaluate_fn = evaluate_fn
        self.best_metric = best_metric
        self.best = best
        self.output_dir = output_dir
        self._writer = None

    def on_train_batch_end(self, batch, logs=None):
        before = self.done
        super().on_train_batch_end(batch, logs)
        loss = (logs or {}).get("loss")
        if loss is not None and not np.all(np.isfinite(np.asarray(loss))):
            self._stop(f"the loss is {np.asarray(loss).ravel()[0]}")
        if self.evaluate_fn is not None and (
                self.done // self.steps_per_epoch
                > before // self.steps_per_epoch
                or self.done >= self.total_batches):
            self._evaluate()

    def on_epoch_end(self, epoch, logs=None):
        self._check_weights()
        self.progress.assign(epoch + 1)
        _save_checkpoint(self.manager, epoch + 1)

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()

    def _check_weights(self):
        name = first_non_finite(self.model.trainable_variables)
        if name is not None:
            self._stop(f"the weights are not finite ({name})")

    def _stop(self, what):
        latest = self.manager.latest_checkpoint
        kept = (f"{latest} (step {_checkpoint_step(latest, self.chunk, self.total_batches)}"
                ") is the last checkpoint" if latest
                else "no checkpoint was written")
        raise TrainingDivergedError(
            f"training stopped at step {self.done} of {self.total_batches}: "
            f"{what}; {kept}")

    def _evaluate(self):
        self._check_weights()
        # NumPy and TensorFlow scalars become Python numbers (for JSON).
        metrics = {name: np.asarray(value).item() if np.ndim(value) == 0
                   else value for name, value in self.evaluate_fn().items()}
        print(f"eval after epoch {self.done / self.steps_per_epoch:g} (step "
              f"{self.done}/{self.total_batches}): "
              + json.dumps(metrics, sort_keys=True))
        self._log(metrics, step=self.done)
        if self.best_metric is None:
            return
        if self.best_metric not in metrics:
            raise ValueError(
                f"evaluate_fn returned no {self.best_metric!r} (the "
                f"best_metric); it returned {sorted(metrics)}")
        if self.best is None or metrics[self.best_metric] > self.best[self.best_metric]:
            save_best(self.trained_model, self.output_dir, metrics)
            self.best = metrics

    def _log(self, metrics, step):
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(
                os.path.join(self.output_dir, "logs", "dev"))
        with self._writer.as_default(step=step):
            for name, value in metrics.items():
                if isinstance(value, (int, float)):
                    tf.summary.scalar(f"dev/{name}", float(value))
        self._writer.flush()


def _checkpoint_step(path, chunk, total_batches):
    """The batches done when checkpoint `path` (`.../ckpt-N`) was saved."""
    return min(int(path.rsplit("-", 1)[1]) * chunk, total_batches)


def _save_checkpoint(manager, number):
    """`manager.save` as checkpoint `number`. If it fails (a full disk,
    Ctrl-C), the files it started are removed, so the previous checkpoints
    stay the latest; a full, over-quota or read-only disk is reported as a
    `StorageError` naming the directory and its free space."""
    try:
        manager.save(checkpoint_number=number)
    except BaseException as error:
        prefix = os.path.join(manager.directory, f"ckpt-{number}")
        for path in tf.io.gfile.glob(prefix + "_temp*") + tf.io.gfile.glob(
                prefix + ".*"):
            if tf.io.gfile.isdir(path):
                tf.io.gfile.rmtree(path)
            else:
                tf.io.gfile.remove(path)
        reported = storage_error(error, manager.directory)
        if reported is not None:
            raise reported from error
        raise


def train(model, train_dataset, *, steps_per_epoch, config, loss,
          metrics=None, loss_weights=None, evaluate_fn=None, best_metric=None,
          strategy=None, callbacks=(), training_model=None):
    """Compiles `model` with BERT's optimizer and fits it, resuming from the
    last checkpoint in `config.model_dir` if there is one.

    Args:
      model: a Keras model built in `strategy.scope()`.
      train_dataset: one epoch of (features, labels) batches, finite and
        deterministic for a given seed (shuffle with `seed=`); it is repeated
        here, and on resume the consumed batches are skipped.
      steps_per_epoch: batches in one epoch.
      config: a `TrainingConfig`.
      loss, metrics, loss_weights: as for `Model.compile`.
      evaluate_fn: optional callable returning a dict of whole-set metrics,
        called at the end of every epoch (whatever
        `config.checkpoint_steps`) and of the run, and logged to
        TensorBoard under `dev/`;
        with `best_metric` (higher is better) the best inference weights
        are kept in `model_dir/best.weights.h5` (`restore_best_weights`).
      strategy: the `tf.distribute.Strategy` the model was built in.
      callbacks: extra Keras callbacks.
      training_model: optional model that `fit` runs instead of `model`:
        one whose outputs are `model`'s and whose variables include
        `model`'s (e.g. `tfbert.training.layer_transfer.LayerTransfer`,
        which adds loss terms). `model` stays what is evaluated and whose
        best weights are kept; the checkpoint holds both.

    Returns:
      The Keras `History` of the chunks run in this process.

    Raises:
      TrainingDivergedError: the loss or weights became non-finite.
      TrainingInterrupted: on Ctrl-C.
      tfbert.utils.atomic.StorageError: a checkpoint or best-model file did
        not fit on the disk (or it is read-only).
    """
    strategy = strategy or tf.distribute.get_strategy()
    accumulation = config.gradient_accumulation_steps
    chunk = config.checkpoint_steps or steps_per_epoch
    total_batches = max(1, math.ceil(config.num_train_epochs * steps_per_epoch))
    # The last chunk may be partial: `_StopAfter` ends it at total_batches.
    num_chunks = math.ceil(total_batches / chunk)
    total_updates = max(1, total_batches // accumulation)
    warmup_updates = int(config.warmup_proportion * total_updates)
    # Non-chief workers write the same files into a directory of their own.
    output_dir = config.model_dir
    if not is_chief(strategy):
        output_dir = os.path.join(config.model_dir, "worker_tmp",
                                  str(strategy.cluster_resolver.task_id))
    # Read before any work, so a corrupt file stops the run up front.
    best = read_best_metrics(output_dir) if best_metric else None
    updates = (f", {total_updates} optimizer updates" if accumulation > 1
               else "")
    epochs = config.num_train_epochs
    print(f"training {total_batches} steps ({epochs:g} "
          f"epoch{'' if epochs == 1 else 's'} of {steps_per_epoch} steps"
          f"{updates}, {warmup_updates} of warmup), a checkpoint every "
          f"{chunk} steps")

    fitted = training_model or model
    with strategy.scope():
        optimizer = create_optimizer(
            config.learning_rate, total_steps=total_updates,
            warmup_steps=warmup_updates,
            weight_decay=config.weight_decay, epsilon=config.adam_epsilon,
            gradient_accumulation_steps=accumulation,
            layerwise_decay=config.layerwise_lr_decay,
            num_layers=(model.encoder.config.num_layers
                        if config.layerwise_lr_decay else None))
        fitted.compile(optimizer=optimizer, loss=loss, metrics=metrics,
                       loss_weights=loss_weights,
                       jit_compile=config.jit_compile,
                       steps_per_execution=config.steps_per_execution)
        optimizer.build(fitted.trainable_variables)
        progress = tf.Variable(0, dtype=tf.int64, trainable=False)
        random_state = _random_state(fitted)
        _reseed(random_state, config.seed)
    # Under float16, `optimizer` is the inner optimizer and the model tracks
    # its `LossScaleOptimizer` (loss scale and its counter).
    checkpoint = tf.train.Checkpoint(
        model=model, optimizer=optimizer, progress=progress,
        random_state=random_state,
        **({"training_model": training_model} if training_model else {}))
    checkpoint_dir = os.path.join(output_dir, "checkpoints")
    manager = tf.train.CheckpointManager(checkpoint, checkpoint_dir,
                                         max_to_keep=2)
    initial_chunk = 0
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
        initial_chunk = int(progress.numpy())
        print(f"Resuming from {manager.latest_checkpoint}: "
              f"{initial_chunk * chunk} of {total_batches} batches done")
    if initial_chunk >= num_chunks:
        print("Training already complete.")
        return None

    initial_batches = initial_chunk * chunk
    # The task modules' datasets come prefetched (`prefetch_for_keras`).
    dataset = without_autotuning(
        train_dataset.repeat().skip(initial_batches))
    stop = _StopAfter(total_batches, chunk, initial_batches)
    # The progress line of an epoch comes before its evaluation's.
    all_callbacks = [
        stop,
        TrainingProgress(steps_per_epoch, total_batches, chunk,
                         initial_batches, verbose=config.verbose),
        _ChunkCheckpoint(model, manager, progress, chunk, steps_per_epoch,
                         total_batches, initial_batches, evaluate_fn,
                         best_metric, best, output_dir),
        keras.callbacks.TensorBoard(os.path.join(output_dir, "logs")),
        *callbacks,
    ]
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        _detach_multi_worker_strategy(fitted)
    try:
        with strategy.scope(), _without_remembered_strategy(fitted):
            return fitted.fit(dataset, epochs=num_chunks,
                             initial_epoch=initial_chunk,
                             steps_per_epoch=chunk, callbacks=all_callbacks,
                             shuffle=False, verbose=0)
    except KeyboardInterrupt:
        latest = manager.latest_checkpoint
        if latest:
            kept = (f"{latest} holds step "
                    f"{_checkpoint_step(latest, chunk, total_batches)}; "
                    "rerunning the same command resumes from there")
        else:
            kept = ("no checkpoint was written yet; rerunning the same "
                    "command starts training again")
        raise TrainingInterrupted(
            f"interrupted at step {stop.done} of {total_batches}: "
            f"{kept}") from None


@contextlib.contextmanager
def _without_remembered_strategy(model):
    """Makes `fit` draw every batch from one iterator of the dataset.

    A model that remembers its strategy makes Keras 3.15 `fit` take a batch
    from a first iterator of the dataset (to build the model) and then
    train from a second one. Both draw their epochs' shuffle seeds from the
    dataset's one seed generator (`Dataset.shuffle(seed=...)` reshuffles per
    iteration), in whichever order their background prefetching gets there,
    so the same run sometimes trained on other batches (now and then, more
    often on a busy machine). The model is built already;
    without the remembered strategy Keras takes it from the enclosing
    `strategy.scope()` and skips the first iterator.
    """
    remembered = model._distribute_strategy
    model._distribute_strategy = None
    try:
        yield
    finally:
        model._distribute_strategy = remembered


def _random_state(model):
    """The model's variables that are not weights: the dropout layers'
    `SeedGenerator` states. `tf.train.Checkpoint(model=...)` does not save
    them (a `SeedGenerator` is not a trackable attribute), so a resumed run
    would draw the dropout masks of step 0 again."""
    weights = {id(weight) for weight in model.weights}
    return [variable for variable in model.variables
            if id(variable) not in weights]


def _reseed(random_state, seed):
    """Gives every seed state a distinct stream derived from `seed`."""
    rng = np.random.default_rng(seed)
    for state in random_state:
        state.assign(np.array([rng.integers(2**31 - 1), 0],
                              dtype=state.dtype))


def _detach_multi_worker_strategy(model):
    """Lets Keras 3.15 `fit` run under a `MultiWorkerMirroredStrategy`.

    Two Keras defects block it (keras-team/keras#20329, #20585): a model that
    remembers its strategy eagerly `strategy.reduce`s the first batch to build
    itself, which fails for a dict of features; and the step's logs are
    reduced with `reduce("MEAN", axis=0)`, which fails on scalars. Forgetting
    the strategy makes Keras take it from the enclosing `strategy.scope()`
    instead (the model is already built), and logs of shape [1] reduce to the
    mean over all workers. Evaluation and prediction outside
    `strategy.scope()` then run locally on each worker.
    """
    model._distribute_strategy = None
    for name in ("train_step", "test_step"):
        step = getattr(model, name)
        setattr(model, name, functools.partial(_rank_one_logs, step))


def _rank_one_logs(step, data):
    return tree.map_structure(lambda v: tf.reshape(v, [1]), step(data))


def restore_trained_weights(model, model_dir):
    """Loads the last training checkpoint of `model_dir` into `model` (for
    evaluation, prediction or export without `--do_train`)."""
    latest = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
    if latest is None:
        raise FileNotFoundError(
            f"no checkpoint in {model_dir}/checkpoints; run with `do_train` "
            "first")
    tf.train.Checkpoint(model=model).restore(latest).expect_partial()
