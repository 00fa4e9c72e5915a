"""Google's original TF1 BERT checkpoints (`bert_model.ckpt.*`)."""

import glob
import os

import numpy as np
import tensorflow as tf

CHECKPOINT_PREFIX = "bert_model.ckpt"


def _is_optimizer_state(name):
    return (name == "global_step" or name.endswith(("/adam_m", "/adam_v"))
            or name.startswith("_CHECKPOINTABLE_OBJECT_GRAPH"))


def find_checkpoint(directory):
    """Returns the checkpoint prefix in `directory`, or None."""
    default = os.path.join(directory, CHECKPOINT_PREFIX)
    if os.path.exists(default + ".index"):
        return default
    indexes = sorted(glob.glob(os.path.join(directory, "*.ckpt*.index")))
    return indexes[0][: -len(".index")] if indexes else None


def read_weights(prefix):
    """Reads a TF1 checkpoint into the canonical dict, skipping `global_step`
    and Adam slots."""
    try:
        reader = tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as e:
        raise ValueError(f"{prefix}: not a readable TF checkpoint: {e}") from e
    return {name: np.asarray(reader.get_tensor(name), dtype=np.float32)
            for name in reader.get_variable_to_shape_map()
            if not _is_optimizer_state(name)}


def write_weights(directory, weights):
    """Writes the canonical dict as `bert_model.ckpt.{index,data-*}`."""
    names = sorted(weights)
    tf.raw_ops.SaveV2(
        prefix=os.path.join(directory, CHECKPOINT_PREFIX),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(weights[n], tf.float32) for n in names])
