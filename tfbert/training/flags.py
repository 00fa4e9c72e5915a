"""Command-line flags shared by every task script, defined once."""

import keras
from absl import flags

from tfbert.training.distribution import STRATEGIES, get_strategy
from tfbert.training.precision import POLICIES, set_mixed_precision
from tfbert.training.trainer import TrainingConfig


def define_training_flags(max_seq_length=128, train_batch_size=32,
                          learning_rate=5e-5, num_train_epochs=3.0):
    """Defines the flags every task shares; the defaults a task passes here
    are the ones its recipe uses."""
    flags.DEFINE_string("init_checkpoint", "minilm-l6-h384-uncased",
                        "Preset name or checkpoint directory to start from.")
    flags.DEFINE_string("model_dir", None, "Checkpoints, logs and results.")
    flags.DEFINE_string("export_dir", None,
                        "If set, export a SavedModel to EXPORT_DIR/<version>/.")
    flags.DEFINE_bool("do_train", False, "Train.")
    flags.DEFINE_bool("do_eval", False, "Evaluate on the eval set.")
    flags.DEFINE_bool("do_predict", False, "Write test-set predictions.")
    flags.DEFINE_integer("max_seq_length", max_seq_length,
                         "Longest packed input, in tokens.")
    flags.DEFINE_bool("pad_to_max_length", False,
                      "Pad every batch to max_seq_length (fixed shapes for "
                      "TPU/XLA) instead of to its longest sequence.")
    flags.DEFINE_integer("train_batch_size", train_batch_size,
                         "Global training batch size.")
    flags.DEFINE_integer("eval_batch_size", 64, "Global eval batch size.")
    flags.DEFINE_float("learning_rate", learning_rate, "Peak learning rate.")
    flags.DEFINE_float("num_train_epochs", num_train_epochs, "Training epochs.")
    flags.DEFINE_float("warmup_proportion", 0.1,
                       "Fraction of steps of linear warmup.")
    flags.DEFINE_float("weight_decay", 0.01, "AdamW weight decay.")
    flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon.")
    flags.DEFINE_integer("gradient_accumulation_steps", 1,
                         "Batches per optimizer update.")
    flags.DEFINE_float("layerwise_lr_decay", None,
                       "Per-layer learning-rate decay factor (e.g. 0.9).")
    flags.DEFINE_integer("checkpoint_steps", None,
                         "Batches between checkpoints (default: one epoch).")
    flags.DEFINE_enum("mixed_precision", "none", sorted(POLICIES),
                      "Mixed precision policy.")
    flags.DEFINE_enum("distribution_strategy", "one_device", list(STRATEGIES),
                      "tf.distribute strategy.")
    flags.DEFINE_string("tpu", None, "TPU address for --distribution_strategy=tpu.")
    flags.DEFINE_integer("num_gpus", None, "GPUs to use (default: all).")
    flags.DEFINE_bool("jit_compile", False, "XLA-compile the model.")
    flags.DEFINE_integer("steps_per_execution", 1, "Batches per tf.function call.")
    flags.DEFINE_integer("seed", 42, "Random seed.")
    flags.DEFINE_integer("max_train_examples", 0,
                         "Use only the first N training examples (0 = all).")


def setup(FLAGS):
    """Creates the strategy, then applies the seed and precision flags.

    The strategy comes first: a multi-worker strategy must configure the
    TensorFlow runtime before any op runs."""
    strategy = get_strategy(FLAGS.distribution_strategy,
                            num_gpus=FLAGS.num_gpus, tpu=FLAGS.tpu)
    keras.utils.set_random_seed(FLAGS.seed)
    set_mixed_precision(FLAGS.mixed_precision)
    return strategy


def training_config(FLAGS):
    """The `TrainingConfig` the flags describe."""
    if not FLAGS.model_dir:
        raise flags.ValidationError("--model_dir is required")
    return TrainingConfig(
        model_dir=FLAGS.model_dir,
        num_train_epochs=FLAGS.num_train_epochs,
        learning_rate=FLAGS.learning_rate,
        warmup_proportion=FLAGS.warmup_proportion,
        weight_decay=FLAGS.weight_decay,
        adam_epsilon=FLAGS.adam_epsilon,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        layerwise_lr_decay=FLAGS.layerwise_lr_decay,
        checkpoint_steps=FLAGS.checkpoint_steps,
        jit_compile=FLAGS.jit_compile,
        steps_per_execution=FLAGS.steps_per_execution,
        seed=FLAGS.seed)
