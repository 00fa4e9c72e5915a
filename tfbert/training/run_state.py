"""What a model dir belongs to, and who is using it.

A model dir holds one training run: its checkpoints, best model, logs and
`run_fingerprint.json`, the description of the run (training flags, data
files' sizes and hashes) written by its first start. A later start resumes
only if its fingerprint is the same (`check_fingerprint`); otherwise it would
continue, or declare complete, a run on other data or flags.
`clear_training_state` removes that run for `--overwrite_model_dir`.
`ModelDirLock` keeps a second process out while one is running. Messages
name the task's parameters in backticks (`overwrite_model_dir`), which the
task runner reports as flags or config fields (`tfbert_cli.errors.render`).
"""

import fcntl
import glob
import hashlib
import json
import logging
import os
import shutil

from tfbert.training.best_model import BEST_METRICS, BEST_WEIGHTS
from tfbert.utils import write_json_atomic

FINGERPRINT = "run_fingerprint.json"
LOCK = ".lock"
# Everything a training run writes into its model dir (and nothing else).
TRAINING_STATE = ("checkpoints", BEST_WEIGHTS, BEST_METRICS, "logs",
                  "worker_tmp", FINGERPRINT)
_UNSET = "<unset>"

_CHUNK = 1 << 20


class ModelDirMismatchError(ValueError):
    """The model dir holds a run with other flags or data."""


class ModelDirLockedError(ValueError):
    """Another live process is using the model dir."""


def file_fingerprint(path):
    """Size and SHA-256 of a file's bytes; for a directory or a glob
    pattern, of each file in it (keyed by path), so a fingerprint changes
    when any data file does.

    Returns:
      `{"size": int, "sha256": hex}` for a file, `{path: that}` otherwise.

    Raises:
      FileNotFoundError: if nothing matches `path`.
    """
    path = os.fspath(path)
    if os.path.isfile(path):
        return _hash_file(path)
    if os.path.isdir(path):
        files = [os.path.join(root, name)
                 for root, _, names in os.walk(path) for name in names]
    else:
        files = [name for name in glob.glob(path) if os.path.isfile(name)]
    if not files:
        raise FileNotFoundError(f"{path}: no such file, directory or glob match")
    return {name: _hash_file(name) for name in sorted(files)}


def _hash_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return {"size": os.path.getsize(path), "sha256": digest.hexdigest()}


def check_fingerprint(model_dir, fingerprint):
    """Records `fingerprint` (a JSON-able dict) for a new run in `model_dir`,
    or checks that it equals the one recorded.

    Raises:
      ModelDirMismatchError: one line naming each top-level key that
        changed (old -> new) and how to start over.
    """
    fingerprint = json.loads(json.dumps(fingerprint))  # as it reads back
    path = os.path.join(model_dir, FINGERPRINT)
    if not os.path.exists(path):
        _refuse_unknown_run(model_dir)
        os.makedirs(model_dir, exist_ok=True)
        write_json_atomic(path, fingerprint)
        return
    with open(path, encoding="utf-8") as f:
        try:
            recorded = json.load(f)
        except json.JSONDecodeError as error:
            raise ModelDirMismatchError(
                f"{path}:{error.lineno}: not valid JSON ({error.msg}); pass "
                "`overwrite_model_dir` to start over") from None
    if recorded == fingerprint:
        return
    changes = []
    for key in sorted(set(recorded) | set(fingerprint)):
        old, new = recorded.get(key, _UNSET), fingerprint.get(key, _UNSET)
        if old != new:
            changes.append(f"{_key_name(key)}: {_short(old)} -> "
                           f"{_short(new)}")
    raise ModelDirMismatchError(
        f"{model_dir} holds a run with other settings ({'; '.join(changes)}); "
        "pass `overwrite_model_dir` to start over there, or use a new "
        "`model_dir`")


def _key_name(key):
    """A fingerprint key as a message names it: a key written as a flag,
    `--name` (how the task runner has always keyed its parameters), is the
    parameter `name`, in backticks."""
    return f"`{key[2:]}`" if key.startswith("--") else key


def _refuse_unknown_run(model_dir):
    """Refuses a model dir with training state but no fingerprint (written
    by an older tfbert, or by hand): what it holds cannot be checked."""
    # worker_tmp holds the other workers' own dirs (each fingerprinted): in
    # a multi-worker run they may start before the chief.
    found = [name for name in TRAINING_STATE if name != "worker_tmp"
             and os.path.lexists(os.path.join(model_dir, name))]
    if found:
        raise ModelDirMismatchError(
            f"{model_dir} holds {', '.join(found)} of a run without "
            f"{FINGERPRINT}, which cannot be checked against this one; pass "
            "`overwrite_model_dir` to start over there, or use a new "
            "`model_dir`")


def _short(value, limit=80):
    if value is _UNSET:
        return value
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def clear_training_state(model_dir):
    """Removes what a training run wrote into `model_dir` (checkpoints, best
    model, logs, fingerprint) and nothing else: exports and results written
    by a user stay."""
    for name in TRAINING_STATE:
        path = os.path.join(model_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)


class ModelDirLock:
    """Holds `model_dir/.lock` (the owner's PID) while the block runs.

    A second process entering gets `ModelDirLockedError` naming the owner's
    PID. A lock file left by a process that died (even by `kill -9`) is taken
    over with a warning. The lock is released on exit, also when the block
    raises.

    The file is held with `flock`, not only created with `O_EXCL`: the
    kernel drops a dead process's `flock`, so a stale lock is recognized
    without trusting a PID that may have been reused, and two processes
    taking over the same stale lock cannot both win. Locks are for processes
    on one machine (`flock` is not reliable over NFS).
    """

    def __init__(self, model_dir):
        self.model_dir = os.fspath(model_dir)
        self.path = os.path.join(self.model_dir, LOCK)
        self._fd = None

    def __enter__(self):
        os.makedirs(self.model_dir, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _read_pid(fd)
                os.close(fd)
                raise ModelDirLockedError(
                    f"{self.model_dir} is in use by process {owner} (lock "
                    f"file {self.path}); wait for it to finish or use "
                    "another `model_dir`") from None
            # The holder before us may have removed the file between our
            # open and flock: then we locked an orphan; try again.
            if _same_file(fd, self.path):
                break
            os.close(fd)
        stale = _read_pid(fd)
        if stale is not None:
            logging.warning("taking over %s left by process %s, which is no "
                            "longer running", self.path, stale)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd
        return self

    def __exit__(self, *exc_info):
        # Remove while still holding the lock, so no one can lock the file
        # that is about to go.
        os.remove(self.path)
        os.close(self._fd)
        self._fd = None


def _read_pid(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 64).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def _same_file(fd, path):
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False
