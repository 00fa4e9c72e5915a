"""Helpers shared by the benchmark scripts."""

import os
import subprocess
import tempfile
import time


def _status_mb(field, pid="self"):
    """A memory field of /proc/PID/status (e.g. "VmHWM", "RssAnon") in MB, or
    None if the process has exited or the field is missing."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb():
    """This process's peak resident memory (VmHWM) in MB."""
    peak = _status_mb("VmHWM")
    return float("nan") if peak is None else peak


def run_sampling_private_memory(args, period_s=0.002, env=None):
    """Runs `args` as a subprocess (with environment `env`, default this
    process's) and samples its private resident memory
    (RssAnon: heap, tensors, allocator caches) every `period_s` seconds.

    VmHWM, the kernel's peak RSS, also counts the pages of shared libraries
    the process has touched (file-backed, shared with other processes and
    reclaimable): ~480 MB for TensorFlow + tensorflow-text against ~80 MB for
    torch on this machine, before any model exists. The private peak is the
    memory a run actually needs.

    Returns (returncode, stdout, stderr, peak private MB)."""
    with tempfile.TemporaryFile("w+") as out, \
            tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(args, stdout=out, stderr=err, text=True,
                                   env=env)
        peak = 0.0
        while process.poll() is None:
            private = _status_mb("RssAnon", process.pid)
            if private is not None:
                peak = max(peak, private)
            time.sleep(period_s)
        out.seek(0)
        err.seek(0)
        return process.returncode, out.read(), err.read(), peak



def is_inside(path, directory):
    """Whether `path` lies in `directory` (symlinks resolved): e.g. that a
    `--compare_checkout` worker imported tfbert from that checkout."""
    return os.path.commonpath([os.path.realpath(path),
                               os.path.realpath(directory)]) == (
        os.path.realpath(directory))
