"""Recognising and opening TF Hub SavedModels: handles, local SavedModel
directories and their assets (the checkpoint readers and the tokenizers use
these; what a SavedModel holds is read by `tfbert.checkpoints.tf_hub`)."""

import os

import tensorflow as tf


def is_hub_handle(name):
    """True for a TF Hub handle (an http(s):// or gs:// URL, e.g. a tfhub.dev
    or Kaggle Models address) rather than a local path or preset name."""
    return isinstance(name, str) and name.startswith(
        ("https://", "http://", "gs://"))


def resolve_handle(handle):
    """The local SavedModel directory of a TF Hub handle: downloaded once by
    `tensorflow_hub` into its cache (TFHUB_CACHE_DIR)."""
    try:
        import tensorflow_hub as hub
    except ImportError as e:
        raise ImportError(f"{handle}: reading a TF Hub handle needs "
                          "tensorflow-hub: pip install 'tfbert[hub]'") from e
    return hub.resolve(handle)


def is_hub_saved_model(directory):
    """True if `directory` holds a SavedModel (saved_model.pb + variables/)."""
    return (os.path.isfile(os.path.join(directory, "saved_model.pb"))
            and os.path.isdir(os.path.join(directory, "variables")))


def load_saved_model(directory):
    """`tf.saved_model.load(directory)`, failing with one line naming it."""
    try:
        return tf.saved_model.load(os.fspath(directory))
    except (tf.errors.OpError, ValueError, RuntimeError) as e:
        raise ValueError(f"{directory}: cannot load the SavedModel: {e}") from e


def asset_path(loaded, attribute):
    """The file path of the asset `loaded.<attribute>`, or None."""
    asset = getattr(loaded, attribute, None)
    if asset is None:
        return None
    return asset.asset_path.numpy().decode("utf-8")


def tokenizer_settings(loaded):
    """`(vocab_path, lowercase)` of a loaded TF Hub BERT encoder: its
    `vocab_file` asset and `do_lower_case` variable; either may be None."""
    lowercase = getattr(loaded, "do_lower_case", None)
    lowercase = None if lowercase is None else bool(lowercase.numpy())
    return asset_path(loaded, "vocab_file"), lowercase
