"""Atomic writes: complete or untouched, normal permissions, clear disk errors."""

import errno
import json
import os
import stat

import pytest

from tfbert.utils import atomic_write, write_json_atomic
from tfbert.utils.atomic import check_writable


def _leftovers(directory, name):
    return [p for p in os.listdir(directory) if p != name]


def test_replaces_the_file_with_the_complete_content(tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text("old")
    write_json_atomic(path, {"b": 1, "a": [1.5]})
    assert json.loads(path.read_text()) == {"a": [1.5], "b": 1}
    with atomic_write(path, "wb") as f:
        f.write(b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert _leftovers(tmp_path, "metrics.json") == []


def test_a_failure_inside_the_block_keeps_the_old_file(tmp_path):
    path = tmp_path / "best_metrics.json"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(path) as f:
            f.write("half of the new")
            raise RuntimeError("killed mid-write")
    assert path.read_text() == "old"
    assert _leftovers(tmp_path, "best_metrics.json") == []


@pytest.mark.parametrize("umask, expected", [(0o022, 0o644), (0o077, 0o600),
                                             (0o002, 0o664)])
def test_mode_follows_the_umask_like_open(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        with atomic_write(tmp_path / "a.txt") as f:
            f.write("x")
        with open(tmp_path / "b.txt", "w") as f:
            f.write("x")
    finally:
        os.umask(old)
    mode = stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode)
    assert mode == expected == stat.S_IMODE(os.stat(tmp_path / "b.txt").st_mode)


@pytest.mark.parametrize("code, reason", [
    (errno.ENOSPC, "the disk is full"),
    (errno.EDQUOT, "the disk quota is exceeded"),
    (errno.EROFS, "the file system is read-only")])
def test_storage_errors_name_the_file_and_the_reason(tmp_path, monkeypatch,
                                                     code, reason):
    path = tmp_path / "best.weights.h5"
    path.write_bytes(b"old weights")

    def fail(fd):
        raise OSError(code, os.strerror(code))

    # A full disk often shows only at fsync (delayed allocation).
    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError) as info:
        with atomic_write(path, "wb") as f:
            f.write(b"new weights")
    assert info.value.errno == code
    assert str(path) in str(info.value) and reason in str(info.value)
    assert path.read_bytes() == b"old weights"
    assert _leftovers(tmp_path, "best.weights.h5") == []


def test_read_only_directory_is_reported_at_open(tmp_path, monkeypatch):
    real_open = os.open

    def read_only(path, flags, mode=0o777):
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(OSError, match="read-only") as info:
        write_json_atomic(tmp_path / "x.json", {})
    assert str(tmp_path / "x.json") in str(info.value)


def test_other_errors_pass_through_unchanged(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_json_atomic(tmp_path / "missing" / "x.json", {})


def test_check_writable_refuses_only_a_non_empty_directory(tmp_path):
    check_writable(tmp_path / "absent")
    check_writable(tmp_path)
    (tmp_path / "saved_model.pb").write_bytes(b"")
    with pytest.raises(FileExistsError, match="exists and is not empty"):
        check_writable(tmp_path)
