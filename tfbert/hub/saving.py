"""Writing a SavedModel directory atomically."""

import os

import tensorflow as tf

from tfbert.export.serving_ops import check_serving_ops
from tfbert.utils.atomic import (check_writable, publish_directory,
                                 staging_directory)


def save_atomically(root, export_dir, check_ops=False):
    """Saves the trackable `root` as a SavedModel in `export_dir`.

    The SavedModel is written into a temporary sibling directory and renamed
    only when complete (and, with `check_ops`, when
    `tfbert.export.check_serving_ops` accepts it), so a failure never leaves
    a half-written `export_dir`.
    """
    export_dir = os.path.abspath(os.fspath(export_dir))
    check_writable(export_dir)
    with staging_directory(os.path.dirname(export_dir)) as staging:
        tf.saved_model.save(root, staging)
        if check_ops:
            check_serving_ops(staging)
        publish_directory(staging, export_dir)
    return export_dir
