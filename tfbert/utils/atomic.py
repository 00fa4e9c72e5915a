"""Atomic file writes: a reader sees the old file or the complete new one,
never a partial one, whatever kills the writer.

The data goes to a temporary file in the target's directory (the same file
system, so the final `os.replace` is atomic), is flushed to disk with
`fsync`, and only then replaces the target. On any failure the temporary
file is removed and the target is left as it was. The new file's mode
follows the umask as a plain `open(path, "w")` would (0644 under umask 022),
unlike `tempfile.mkstemp`'s owner-only 0600.
"""

import contextlib
import errno
import json
import os
import secrets
import shutil
import tempfile

from tfbert_config.files import holds_files

# errno -> what to tell the user.
_STORAGE_ERRORS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
}


class StorageError(OSError):
    """Writing failed because the storage is full, over quota or read-only;
    the message names the path and the free space."""


def storage_error(error, path):
    """The `StorageError` to raise for `error`, raised while writing `path`,
    or None if `error` is not about the storage.

    `error` is an `OSError` with one of those errnos, or any other exception
    quoting the operating system's message for them (TensorFlow's file
    errors carry only the message, e.g. "No space left on device
    [Op:SaveV2]").
    """
    if isinstance(error, StorageError):
        return error
    code = getattr(error, "errno", None)
    if code not in _STORAGE_ERRORS:
        text = str(error)
        code = next((c for c in _STORAGE_ERRORS if os.strerror(c) in text),
                    None)
    if code is None:
        return None
    return StorageError(code, f"cannot write {path}: {_STORAGE_ERRORS[code]} "
                        f"({_free_space(path)})")


def _free_space(path):
    """"N MB free on the file system of `path`" (of its nearest existing
    ancestor)."""
    directory = os.path.abspath(path)
    while not os.path.exists(directory):
        directory = os.path.dirname(directory)
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return "free space unknown"
    return f"{free / 1e6:.1f} MB free"


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8"):
    """Opens a file object that replaces `path` when the block exits cleanly.

    Args:
      path: the file to (re)place.
      mode: "w" (text) or "wb" (bytes).
      encoding: text encoding for mode "w".

    Yields:
      The open temporary file.

    Raises:
      StorageError: naming `path`, the reason and the free space when the
        disk is full, over quota or read-only; other OSErrors as raised.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', got {mode!r}")
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(
        directory,
        f".{os.path.basename(path)}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        # O_EXCL with mode 0o666: the kernel applies the umask, as for open().
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as error:
        _raise_if_storage_error(error, path)
        raise
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        if isinstance(error, OSError):
            _raise_if_storage_error(error, path)
        raise
    _fsync_directory(directory)


def write_json_atomic(path, obj):
    """Writes `obj` as indented, key-sorted JSON to `path`, atomically."""
    text = json.dumps(obj, indent=2, sort_keys=True) + "\n"
    with atomic_write(path) as f:
        f.write(text)


def check_writable(directory):
    """Raises FileExistsError if `directory` exists and is not empty: a new
    tree may be published there, nothing already written is replaced."""
    if holds_files(directory):
        raise FileExistsError(f"{directory} exists and is not empty")


@contextlib.contextmanager
def staging_directory(parent, prefix=".tmp-"):
    """Yields a new directory inside `parent` to write a whole tree into
    before `publish_directory` renames it into place; if the block fails or
    does not publish it, it is removed."""
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=prefix, dir=parent)
    try:
        yield staging
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging)


def publish_directory(staging, target):
    """Renames the finished `staging` tree to `target` (which must not exist,
    or be an empty directory), after giving every directory and file in it
    the mode a plain write would have (0755/0644 under umask 022): mkdtemp
    makes owner-only directories and some writers owner-only files, which a
    server running as another user could not read."""
    umask = os.umask(0o022)
    os.umask(umask)
    for directory, _, files in os.walk(staging):
        os.chmod(directory, 0o777 & ~umask)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o666 & ~umask)
    if os.path.isdir(target) and not os.listdir(target):
        os.rmdir(target)
    os.rename(staging, target)
    _fsync_directory(os.path.dirname(os.path.abspath(target)))


def _raise_if_storage_error(error, path):
    reported = storage_error(error, path)
    if reported is not None and reported is not error:
        raise reported from error


def _fsync_directory(directory):
    """Makes the rename itself durable (best effort: not every file system
    lets a directory be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
