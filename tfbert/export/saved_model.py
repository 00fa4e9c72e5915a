"""Writing SavedModels in TF Serving's layout, atomically."""

import os
import re
import shutil
import tempfile

import tensorflow as tf

from tfbert.export.serving_ops import check_serving_ops
from tfbert.export.warmup import write_warmup_requests

_VERSION = re.compile(r"^\d+$")


def next_version(export_dir):
    """1 + the largest integer version directory in `export_dir` (1 if none)."""
    if not os.path.isdir(export_dir):
        return 1
    versions = [int(name) for name in os.listdir(export_dir)
                if _VERSION.match(name)]
    return max(versions, default=0) + 1


def export_saved_model(module, export_dir, signatures, warmup_inputs=None,
                       check_ops=True):
    """Saves `module` as `export_dir/<version>/`, the layout TF Serving loads.

    The SavedModel is written to a temporary directory inside `export_dir`,
    checked, and renamed to the next free version number only when complete,
    so a crash never leaves a half-written version. (TF Serving ignores
    non-numeric directories.)

    Args:
      module: the `tf.Module` to save (it must track every resource its
        signatures use: model variables, vocabulary tables).
      export_dir: the model's base directory, e.g. `saved_models/sst2`.
      signatures: dict of signature name -> concrete function.
      warmup_inputs: optional dict of signature name -> dict of input name ->
        numpy array; written as `assets.extra/tf_serving_warmup_requests`.
      check_ops: fail if the graph uses ops TF Serving 2.10+ lacks.

    Returns:
      The path of the version directory written.
    """
    os.makedirs(export_dir, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".tmp-export-", dir=export_dir)
    try:
        tf.saved_model.save(module, staging, signatures=signatures)
        if check_ops:
            check_serving_ops(staging)
        if warmup_inputs:
            write_warmup_requests(
                os.path.join(staging, "assets.extra",
                             "tf_serving_warmup_requests"),
                os.path.basename(os.path.normpath(export_dir)), warmup_inputs)
        while True:
            target = os.path.join(export_dir, str(next_version(export_dir)))
            try:
                os.rename(staging, target)
                return target
            except OSError:
                # Another exporter took this version first; take the next.
                if not os.path.exists(target):
                    raise
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging)
