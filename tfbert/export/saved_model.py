"""Writing SavedModels in TF Serving's layout, atomically."""

import logging
import os
import re
import shutil
import socket

import tensorflow as tf
from absl import logging as absl_logging

from tfbert.export.serving_module import serving_model
from tfbert.export.serving_ops import check_serving_ops
from tfbert.export.warmup import write_warmup_requests
from tfbert.text.vocab import save_vocabulary
from tfbert.utils.atomic import (
    publish_directory, staging_directory, storage_error)
from tfbert.utils.finite import NonFiniteError, first_non_finite

_VERSION = re.compile(r"^\d+$")
# A version directory is written under this prefix, then renamed. Hidden
# (a leading "."): TF Serving ignores it, and tfbert-query, which imports no
# tfbert module, tells an unfinished export by that.
_STAGING_PREFIX = ".tmp-export-"
# `.tmp-export-<host>.<pid>.<random>`: who is (or was) writing it.
_STAGING = re.compile(r"^\.tmp-export-(?P<host>.+)\.(?P<pid>\d+)\.[^.]+$")


def next_version(export_dir):
    """1 + the largest integer version directory in `export_dir` (1 if none)."""
    if not os.path.isdir(export_dir):
        return 1
    versions = [int(name) for name in os.listdir(export_dir)
                if _VERSION.match(name)]
    return max(versions, default=0) + 1


def export_saved_model(module, export_dir, *, token_ids_only=False,
                       constant_kernels=False, feed_forward_shards=None,
                       limits=None, xla=False):
    """Saves a `ServingModule` as `export_dir/<version>/`, TF Serving's layout.

    The SavedModel is written to a staging directory inside `export_dir`,
    checked, and renamed to the next free version number only when complete,
    so a crash never leaves a half-written version (TF Serving ignores
    non-numeric directories; the next export removes staging directories
    whose exporting process on this host is gone). The version directory
    gets the permissions of any normal write (0755 under umask 022), so a
    server running as another user can read it.

    The export holds the signatures of `module.signatures()` (with the
    method names of `module.method_names()`), a warmup
    request for each (`assets.extra/tf_serving_warmup_requests`), the
    vocabulary as `assets/vocab.txt` (and the module's `assets()`, e.g. a
    classifier's `labels.txt`), and the model's variables (no optimizer
    state).

    Args:
      module: a `tfbert.export.ServingModule`.
      export_dir: the model's base directory, e.g. `saved_models/sst2`.
      token_ids_only: export only the `serve_token_ids` signature: the
        SavedModel then has no tensorflow-text ops and loads in any
        TensorFlow runtime.
      constant_kernels: store the Dense kernels of a bfloat16 model as
        graph constants (faster on CPUs with AMX, more memory: see
        `tfbert.export.serving_module`).
      feed_forward_shards: column shards each transformer block's
        feed-forward layer is stored as (1: whole); by default
        `FEED_FORWARD_SHARDS`, whole with `constant_kernels` (see
        `tfbert.export.serving_module`).
      limits: the `RequestLimits` (characters per text and per request,
        encoder windows per request) beyond which the signatures refuse a
        request; default `RequestLimits()`.
      xla: run the encoder as one XLA-compiled function, its inputs
        padded to bucket shapes that the warmup requests compile
        (`ServingModule.signatures`); TF Serving then needs
        `--xla_cpu_compilation_enabled` (docs/serving.md).

    Returns:
      The path of the version directory written.

    Raises:
      NonFiniteError: a weight of the model is NaN or infinite (it comes
        from a diverged run); nothing is written.
      StorageError: the disk is full, over quota or read-only (the message
        names `export_dir` and its free space); nothing is left behind.
      ValueError: the graph uses ops that TF Serving 2.10+ does not link;
        `constant_kernels` for a model that does not compute in bfloat16;
        `feed_forward_shards` below 1, above the intermediate size, or
        above 1 with `constant_kernels`; `xla` with `constant_kernels`.
    """
    bad = first_non_finite(module.model.weights)
    if bad is not None:
        raise NonFiniteError(f"cannot export to {export_dir}: weight {bad} is "
                             "not finite (the training diverged)")
    try:
        return _export(module, export_dir, token_ids_only, constant_kernels,
                       feed_forward_shards, limits, xla)
    except Exception as error:
        reported = storage_error(error, export_dir)
        if reported is None:
            raise
        raise reported from error


def _export(module, export_dir, token_ids_only, constant_kernels,
            feed_forward_shards, limits, xla):
    os.makedirs(export_dir, exist_ok=True)
    _remove_stale_staging(export_dir)
    with staging_directory(
            export_dir,
            prefix=f"{_STAGING_PREFIX}{socket.gethostname()}.{os.getpid()}."
    ) as staging:
        signatures = module.signatures(token_ids_only, constant_kernels,
                                       feed_forward_shards, limits, xla)
        _save_quietly(module, staging, signatures)
        _set_method_names(staging, {
            name: method for name, method in module.method_names().items()
            if name in signatures})
        check_serving_ops(staging)
        os.makedirs(os.path.join(staging, "assets"), exist_ok=True)
        save_vocabulary(module.tokenizer.vocabulary,
                        os.path.join(staging, "assets", "vocab.txt"))
        for name, text in module.assets().items():
            with open(os.path.join(staging, "assets", name), "w",
                      encoding="utf-8") as f:
                f.write(text)
        write_warmup_requests(
            os.path.join(staging, "assets.extra",
                         "tf_serving_warmup_requests"),
            os.path.basename(os.path.normpath(export_dir)),
            module.warmup_inputs(token_ids_only))
        while True:
            target = os.path.join(export_dir, str(next_version(export_dir)))
            try:
                publish_directory(staging, target)
                return target
            except OSError:
                # Another exporter took this version first; take the next.
                if not os.path.exists(target):
                    raise


def export_task_model(model, export_dir, serving_module, *,
                      precision="float32", token_ids_only=False,
                      constant_kernels=False, feed_forward_shards=None,
                      limits=None, xla=False):
    """Exports a trained task model for TF Serving, as the task programs do:
    the `ServingModule` that `serving_module(model)` builds on the model at
    `precision` (`serving_model`), written by `export_saved_model` (the
    other arguments are its). Returns the version directory written."""
    module = serving_module(serving_model(model, precision))
    return export_saved_model(
        module, export_dir, token_ids_only=token_ids_only,
        constant_kernels=constant_kernels,
        feed_forward_shards=feed_forward_shards, limits=limits, xla=xla)


def _save_quietly(module, path, signatures):
    """`tf.saved_model.save` without its INFO lines (one per signature input
    it renames, and per file it writes)."""
    tf_logger = logging.getLogger("tensorflow")
    levels = absl_logging.get_verbosity(), tf_logger.level
    absl_logging.set_verbosity(absl_logging.WARNING)
    tf_logger.setLevel(logging.WARNING)
    try:
        tf.saved_model.save(module, path, signatures=signatures)
    finally:
        absl_logging.set_verbosity(levels[0])
        tf_logger.setLevel(levels[1])


def _set_method_names(path, method_names):
    """Rewrites the SavedModel at `path` with the given SignatureDef method
    names (`tf.saved_model.save` writes every signature as a Predict one;
    TF Serving's Classify and Regress APIs serve only their own)."""
    if not method_names:
        return
    from tensorflow.core.protobuf import saved_model_pb2

    pb = os.path.join(path, "saved_model.pb")
    saved_model = saved_model_pb2.SavedModel()
    with open(pb, "rb") as f:
        saved_model.ParseFromString(f.read())
    for meta_graph in saved_model.meta_graphs:
        for name, method in method_names.items():
            meta_graph.signature_def[name].method_name = method
    with open(pb, "wb") as f:
        f.write(saved_model.SerializeToString())


def _remove_stale_staging(export_dir):
    """Deletes staging directories left by interrupted exports: those of a
    process on this host that no longer runs, and unattributable ones."""
    host = socket.gethostname()
    for name in os.listdir(export_dir):
        if not name.startswith(_STAGING_PREFIX):
            continue
        match = _STAGING.match(name)
        if match and (match["host"] != host
                      or _process_exists(int(match["pid"]))):
            continue
        shutil.rmtree(os.path.join(export_dir, name), ignore_errors=True)


def _process_exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # It runs, as another user.
        pass
    return True
