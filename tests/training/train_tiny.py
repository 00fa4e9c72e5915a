"""Trains a tiny classifier with `tfbert.training.train` and writes its
per-step losses as JSON (and with --weights_output its final weights); run as
a subprocess by test_distribution.py (a strategy's devices must be set up
before TensorFlow starts) and test_trainer.py (a run killed mid-training)."""

import json
import os
import sys
import time

from absl import app, flags

flags.DEFINE_string("strategy", "one_device", "Distribution strategy.")
flags.DEFINE_integer("num_cpus", 1, "Logical CPU devices to create.")
flags.DEFINE_string("model_dir", None, "Model directory.")
flags.DEFINE_string("output", None, "Where to write the losses.")
flags.DEFINE_float("dropout", 0.0, "Dropout rate everywhere in the model.")
flags.DEFINE_bool("shuffle", False, "Shuffle the examples (seeded).")
flags.DEFINE_integer("checkpoint_steps", 1, "Batches between checkpoints.")
flags.DEFINE_string("weights_output", None,
                    "If set, write the final weights here (.npz).")
flags.DEFINE_string("pause_file", None,
                    "If set, after the first checkpoint and one more batch, "
                    "create this file and wait to be killed.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    from tfbert.training import split_cpu

    if FLAGS.num_cpus > 1:
        split_cpu(FLAGS.num_cpus)
    import keras
    import numpy as np
    import tensorflow as tf

    from tfbert import BertConfig, BertEncoder
    from tfbert.models import BertClassifier
    from tfbert.training import TrainingConfig, get_strategy, is_chief, train

    # A multi-worker strategy must exist before any other TensorFlow op runs.
    strategy = get_strategy(FLAGS.strategy)
    keras.utils.set_random_seed(7)
    config = BertConfig(vocab_size=64, hidden_size=16, num_layers=2,
                        num_heads=2, intermediate_size=32,
                        hidden_dropout=FLAGS.dropout,
                        attention_dropout=FLAGS.dropout)
    with strategy.scope():
        model = BertClassifier(BertEncoder(config), 2, dropout=FLAGS.dropout)
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 64, (64, 12)).astype("int32")
    features = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                "input_type_ids": np.zeros_like(ids)}
    labels = (ids[:, 1] > 32).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    if FLAGS.shuffle:
        dataset = dataset.shuffle(64, seed=3)
    callbacks = []
    if FLAGS.pause_file:
        callbacks.append(pause_after_first_checkpoint(FLAGS.model_dir,
                                                      FLAGS.pause_file))
    history = train(
        model, dataset.batch(16), steps_per_epoch=4,
        config=TrainingConfig(model_dir=FLAGS.model_dir, num_train_epochs=2,
                              learning_rate=1e-3, warmup_proportion=0.0,
                              checkpoint_steps=FLAGS.checkpoint_steps,
                              verbose=0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        strategy=strategy, callbacks=callbacks)
    if FLAGS.weights_output:
        np.savez(FLAGS.weights_output,
                 *[np.asarray(weight) for weight in model.weights])
    # Prediction under the strategy (as inside `fit`, for evaluation), on 60
    # examples so the last batch is partial, and locally outside its scope.
    eval_dataset = tf.data.Dataset.from_tensor_slices(
        {name: value[:60] for name, value in features.items()}).batch(16)
    with strategy.scope():
        distributed = model.predict(eval_dataset, verbose=0)
    local = model.predict(eval_dataset, verbose=0)
    if is_chief(strategy):
        with open(FLAGS.output, "w") as f:
            json.dump({"loss": history.history["loss"],
                       "replicas": strategy.num_replicas_in_sync,
                       "distributed_logits": distributed.tolist(),
                       "local_logits": local.tolist()}, f)


def pause_after_first_checkpoint(model_dir, pause_file):
    """A callback that, once a checkpoint exists and one more batch has been
    trained (unsaved progress), creates `pause_file` and sleeps, for the
    test to kill the process there."""
    import keras

    class Pause(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if os.path.exists(os.path.join(model_dir, "checkpoints",
                                           "checkpoint")):
                with open(pause_file, "w"):
                    pass
                time.sleep(600)

    return Pause()


if __name__ == "__main__":
    flags.mark_flags_as_required(["model_dir", "output"])
    app.run(main)
    sys.exit(0)
