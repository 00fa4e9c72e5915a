"""The best model an evaluation has seen: `best.weights.h5` holds its
inference weights (no optimizer slots), `best_metrics.json` its dev metrics.

Both files are written atomically, weights first: `best_metrics.json` is
replaced only once the weights it describes are complete, so it never names a
score the weights on disk do not have.
"""

import io
import json
import os

from keras.src.saving import saving_lib

from tfbert.utils import atomic_write, write_json_atomic

BEST_WEIGHTS = "best.weights.h5"
BEST_METRICS = "best_metrics.json"


def save_inference_weights(model, path):
    """Writes the model's own variables (not its optimizer's) to `path` in
    Keras' `.weights.h5` format, atomically.

    The HDF5 file is built in memory and written in one piece: h5py writing
    straight to a full disk can crash the process instead of raising.
    """
    # Keras' public `save_weights` always includes a compiled model's
    # optimizer; the saving library it calls can skip objects.
    buffer = io.BytesIO()
    store = saving_lib.H5IOStore(buffer, mode="w")
    saving_lib._save_state(  # pylint: disable=protected-access
        model, weights_store=store, assets_store=None, inner_path="",
        visited_saveables=_optimizer_ids(model))
    store.close()
    with atomic_write(path, "wb") as f:
        f.write(buffer.getbuffer())


def load_inference_weights(model, path):
    """Loads a file written by `save_inference_weights` (or Keras'
    `save_weights`) into `model`, leaving a compiled model's optimizer as is."""
    saving_lib.load_weights_only(
        model, path, objects_to_skip=[model.optimizer]
        if getattr(model, "optimizer", None) is not None else None)


def read_best_metrics(model_dir):
    """The metrics in `model_dir/best_metrics.json`, or None if there is none.

    Raises:
      ValueError: naming the file, if it is not a JSON object.
    """
    path = os.path.join(model_dir, BEST_METRICS)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        metrics = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{path}:{error.lineno}: not valid JSON ({error.msg}); the file is "
            "truncated or corrupt: delete it (the next evaluation then sets "
            "the best model) or start over with `overwrite_model_dir`"
        ) from None
    if not isinstance(metrics, dict):
        raise ValueError(f"{path}: expected a JSON object of metrics")
    return metrics


def save_best(model, model_dir, metrics):
    """Writes `model`'s inference weights, then `metrics`, as the best."""
    save_inference_weights(model, os.path.join(model_dir, BEST_WEIGHTS))
    write_json_atomic(os.path.join(model_dir, BEST_METRICS), metrics)


def restore_best_weights(model, model_dir):
    """Loads `model_dir/best.weights.h5` into `model` if it exists.

    Returns:
      True if best weights were loaded, False if `model_dir` has none (the
      task tracked no dev metric, or no evaluation has run yet).
    """
    path = os.path.join(model_dir, BEST_WEIGHTS)
    if not os.path.exists(path):
        return False
    load_inference_weights(model, path)
    return True


def _optimizer_ids(model):
    optimizer = getattr(model, "optimizer", None)
    return set() if optimizer is None else {id(optimizer)}
