"""Training progress in real epochs and steps.

`train` runs Keras `fit` in chunks of `checkpoint_steps` batches, which Keras
calls epochs; what a user reads must count the run's own epochs and steps
instead. `StepCounter` knows how many batches of the whole run are done;
`TrainingProgress` shows them: a progress bar on a terminal, and on a log
file or pipe (where a bar is a stream of carriage returns) plain lines.
"""

import math
import sys
import time

import keras
import numpy as np


class StepCounter(keras.callbacks.Callback):
    """Counts the batches of the whole run done so far (`done`), across
    Keras epochs of `chunk` batches, starting from `initial_batches` (a
    resumed run)."""

    def __init__(self, chunk, initial_batches=0):
        super().__init__()
        self.chunk = chunk
        self.initial_batches = initial_batches
        self.done = initial_batches
        self._epoch = 0
        self._first_step = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._first_step = None

    # Keras may number the steps across epochs: count from the epoch's first.
    def on_train_batch_begin(self, batch, logs=None):
        if self._first_step is None:
            self._first_step = batch

    def on_train_batch_end(self, batch, logs=None):
        self.done = self._epoch * self.chunk + batch - self._first_step + 1


class TrainingProgress(StepCounter):
    """Shows training progress per real epoch of `steps_per_epoch` batches.

    The metrics shown are means over the epoch's batches so far (Keras'
    logs average over its own chunks, which straddle epochs).

    Args:
      steps_per_epoch: batches in one epoch.
      total_batches: batches of the whole run.
      chunk, initial_batches: as for `StepCounter`.
      verbose: 0 silent; 1 a progress bar per epoch (Keras' `Progbar`); 2
        lines `epoch E/N step S/T: loss=...`, one at each epoch's end and at
        most one every `interval` seconds in between; "auto": 1 if standard
        output is a terminal, else 2.
      interval: seconds between the lines of `verbose=2`.
    """

    def __init__(self, steps_per_epoch, total_batches, chunk,
                 initial_batches=0, verbose="auto", interval=30.0):
        super().__init__(chunk, initial_batches)
        self.steps_per_epoch = steps_per_epoch
        self.total_batches = total_batches
        self.num_epochs = math.ceil(total_batches / steps_per_epoch)
        if verbose == "auto":
            verbose = 1 if sys.stdout.isatty() else 2
        self.verbose = verbose
        self.interval = interval
        self._shown_epoch = None
        self._bar = None
        self._sums, self._batches = {}, 0
        self._chunk_means, self._chunk_batches = {}, 0
        self._epoch_start = self._last_line = time.monotonic()

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        self._chunk_means, self._chunk_batches = {}, 0

    def on_train_batch_end(self, batch, logs=None):
        before = self.done
        super().on_train_batch_end(batch, logs)
        if not self.verbose:
            return
        epoch_index = (self.done - 1) // self.steps_per_epoch
        if epoch_index != self._shown_epoch:
            self._start_epoch(epoch_index)
        self._add(logs or {}, self.done - before)
        step = self.done - epoch_index * self.steps_per_epoch
        length = min(self.steps_per_epoch,
                     self.total_batches - epoch_index * self.steps_per_epoch)
        means = {name: total / self._batches
                 for name, total in self._sums.items()}
        end = step >= length
        if self.verbose == 1:
            if self._bar is None:
                self._bar = keras.utils.Progbar(length,
                                                stateful_metrics=list(means))
            self._bar.update(step, list(means.items()), finalize=end)
        elif end or time.monotonic() - self._last_line >= self.interval:
            self._line(epoch_index, means)

    def _add(self, logs, new_batches):
        """Adds `new_batches` batches to the epoch's sums: Keras' log values
        are means over the batches of its chunk so far."""
        count = self._chunk_batches + new_batches
        for name, value in logs.items():
            # Multi-worker runs log shape [1] (see `tfbert.training.trainer`).
            if np.size(value) != 1:
                continue
            value = float(np.asarray(value).ravel()[0])
            previous = self._chunk_means.get(name, 0.0) * self._chunk_batches
            self._sums[name] = self._sums.get(name, 0.0) + value * count - previous
            self._chunk_means[name] = value
        self._batches += new_batches
        self._chunk_batches = count

    def _start_epoch(self, epoch_index):
        self._shown_epoch = epoch_index
        self._sums, self._batches, self._bar = {}, 0, None
        self._epoch_start = self._last_line = time.monotonic()
        if self.verbose == 1:
            print(f"epoch {epoch_index + 1}/{self.num_epochs}")

    def _line(self, epoch_index, means):
        self._last_line = time.monotonic()
        metrics = " ".join(f"{name}={value:.4g}"
                           for name, value in means.items())
        print(f"epoch {epoch_index + 1}/{self.num_epochs} step "
              f"{self.done}/{self.total_batches}: {metrics} "
              f"({self._last_line - self._epoch_start:.0f} s)", flush=True)
