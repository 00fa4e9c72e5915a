"""Trains a tiny classifier with `tfbert.training.train` and writes its
per-step losses as JSON; run as a subprocess by test_distribution.py (a
strategy's devices must be set up before TensorFlow starts)."""

import json
import sys

from absl import app, flags

flags.DEFINE_string("strategy", "one_device", "Distribution strategy.")
flags.DEFINE_integer("num_cpus", 1, "Logical CPU devices to create.")
flags.DEFINE_string("model_dir", None, "Model directory.")
flags.DEFINE_string("output", None, "Where to write the losses.")
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
                        num_heads=2, intermediate_size=32, hidden_dropout=0.0,
                        attention_dropout=0.0)
    with strategy.scope():
        model = BertClassifier(BertEncoder(config), 2, dropout=0.0)
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 64, (64, 12)).astype("int32")
    features = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                "input_type_ids": np.zeros_like(ids)}
    labels = (ids[:, 1] > 32).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    history = train(
        model, dataset, steps_per_epoch=4,
        config=TrainingConfig(model_dir=FLAGS.model_dir, num_train_epochs=2,
                              learning_rate=1e-3, warmup_proportion=0.0,
                              checkpoint_steps=1, verbose=0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        strategy=strategy)
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


if __name__ == "__main__":
    flags.mark_flags_as_required(["model_dir", "output"])
    app.run(main)
    sys.exit(0)
