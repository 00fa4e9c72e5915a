"""`export_saved_model`: what lands on disk, and who can load it."""

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from tfbert.export import export_saved_model

# Every test writes or reads a real SavedModel (most through the `exports`
# fixture, ~45 s on a busy machine).
pytestmark = pytest.mark.slow

# Loads a SavedModel and calls serve_token_ids in a process where
# `import tensorflow_text` fails, as in a runtime without tf-text ops.
_LOAD_WITHOUT_TF_TEXT = textwrap.dedent("""
    import json, sys

    class BlockTfText:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "tensorflow_text":
                raise ImportError("tensorflow_text is blocked")

    sys.meta_path.insert(0, BlockTfText())
    import tensorflow as tf
    inputs = json.loads(sys.argv[2])
    loaded = tf.saved_model.load(sys.argv[1])
    out = loaded.signatures["serve_token_ids"](
        **{k: tf.constant(v, tf.int32) for k, v in inputs.items()})
    print(json.dumps({"signatures": sorted(loaded.signatures),
                      "logits": out["logits"].numpy().tolist()}))
""")


def _run(code, *args):
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True,
        text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def _token_ids(module, batch=2):
    ids = np.zeros([batch, module.max_seq_length], np.int32)
    ids[:, :4] = [module.tokenizer.cls_id, 2023, 2003, module.tokenizer.sep_id]
    return {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32),
            "input_type_ids": np.zeros_like(ids)}


@pytest.mark.parametrize("kind", ["classifier", "squad", "ner"])
def test_export_holds_inference_weights_only(kind, serving_modules, exports):
    model = serving_modules[kind].model
    assert model.optimizer.variables  # the slots exist, and are left out
    parameter_bytes = sum(np.asarray(w).nbytes for w in model.weights)
    variables_dir = os.path.join(exports[kind], "variables")
    size = sum(os.path.getsize(os.path.join(variables_dir, name))
               for name in os.listdir(variables_dir))
    assert size <= 1.1 * parameter_bytes


def test_version_dir_follows_the_umask_and_another_user_can_load_it(
        serving_modules):
    base = tempfile.mkdtemp()
    old_umask = os.umask(0o022)
    try:
        os.chmod(base, 0o755)
        path = export_saved_model(serving_modules["regressor"],
                                  os.path.join(base, "model"))
        for root, dirs, files in os.walk(path):
            for name in dirs + [""]:
                mode = stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
                assert mode == 0o755, os.path.join(root, name)
            for name in files:
                mode = stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode)
                assert mode == 0o644, os.path.join(root, name)
        if os.getuid() != 0:
            return  # the mode bits above are what another user needs
        # The child imports as root (the interpreter may live in root's
        # home), then reads the SavedModel as `nobody`.
        result = _run(textwrap.dedent("""
            import os, pwd, sys
            import tensorflow as tf
            import tensorflow_text  # noqa: F401
            nobody = pwd.getpwnam("nobody")
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            loaded = tf.saved_model.load(sys.argv[1])
            out = loaded.signatures["serving_default"](
                sentence=tf.constant(["fine"]))
            print(out["score"].shape)
        """), path)
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stdout.strip().splitlines()[-1] == "(1,)"
    finally:
        os.umask(old_umask)
        shutil.rmtree(base)


def test_stale_staging_dirs_are_removed_live_ones_kept(serving_modules,
                                                       tmp_path):
    host = socket.gethostname()
    exited = subprocess.Popen(["true"])
    exited.wait()
    stale = [f".tmp-export-{host}.{exited.pid}.abc", ".tmp-export-old1234"]
    live = [f".tmp-export-{host}.{os.getpid()}.def",
            f".tmp-export-elsewhere.{exited.pid}.ghi"]
    for name in stale + live:
        (tmp_path / name / "variables").mkdir(parents=True)
    path = export_saved_model(serving_modules["regressor"], str(tmp_path),
                              token_ids_only=True)
    assert sorted(os.listdir(tmp_path)) == sorted(live + ["1"])
    assert path == str(tmp_path / "1")


def test_token_ids_only_export_loads_without_tensorflow_text(
        serving_modules, exports, tmp_path):
    module = serving_modules["ner"]
    path = export_saved_model(module, str(tmp_path / "ids"),
                              token_ids_only=True)
    inputs = _token_ids(module)
    result = _run(_LOAD_WITHOUT_TF_TEXT, path,
                  json.dumps({k: v.tolist() for k, v in inputs.items()}))
    assert result.returncode == 0, result.stderr[-3000:]
    served = json.loads(result.stdout.strip().splitlines()[-1])
    assert served["signatures"] == ["serve_token_ids"]
    real = inputs["input_mask"] == 1  # padding's logits carry no meaning
    np.testing.assert_allclose(np.asarray(served["logits"])[real],
                               np.asarray(module.model(inputs))[real],
                               atol=1e-5)
    # The same child cannot load the full export: the blocker works.
    full = _run(_LOAD_WITHOUT_TF_TEXT, exports["ner"], "{}")
    assert full.returncode != 0
    assert "not registered" in full.stderr


@pytest.mark.parametrize("kind", ["classifier", "squad", "ner"])
def test_vocabulary_asset_is_the_checkpoint_vocabulary(kind, exports,
                                                       minilm_dir):
    with open(os.path.join(exports[kind], "assets", "vocab.txt"),
              encoding="utf-8") as f:
        exported = f.read().split("\n")
    with open(minilm_dir / "vocab.txt", encoding="utf-8") as f:
        checkpoint = f.read().split("\n")
    assert exported[-1] == "" and len(exported) == 30523
    assert [t for t in exported if t] == [t for t in checkpoint if t]
