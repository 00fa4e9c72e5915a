"""The encoder of every family gives the same outputs, loss and one-step
update under Keras's TensorFlow and JAX backends (and under TensorFlow, the
packed first-token output of `tfbert.inference`, which is TensorFlow's
serving path, equals the plain forward's).

The TensorFlow side runs in the test process; the JAX side runs this file as
a script in one subprocess with KERAS_BACKEND=jax, loading the weights the
TensorFlow side saved, so both start from the same numbers. Also: the GPU
benchmark runs under JAX with TensorFlow unimportable.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

BATCH, SEQ = 3, 12
TINY = dict(vocab_size=50, hidden_size=16, num_layers=2, num_heads=2,
            intermediate_size=32, max_position_embeddings=20,
            hidden_dropout=0.0, attention_dropout=0.0)
# One tiny config per family; each exercises its architecture switches.
FAMILY_CONFIGS = {
    "bert": dict(TINY),
    "distilbert": dict(TINY, type_vocab_size=0, use_pooler=False),
    "electra": dict(TINY, embedding_size=8, use_pooler=False),
    "roberta": dict(TINY, type_vocab_size=1, position_offset=2),
    "albert": dict(TINY, embedding_size=8, share_layers=True,
                   hidden_act="gelu_approximate"),
}


def _inputs(config):
    rng = np.random.default_rng(0)
    ids = rng.integers(3, TINY["vocab_size"], (BATCH, SEQ)).astype("int32")
    mask = np.ones_like(ids)
    mask[0, 7:] = 0
    mask[2, 10:] = 0
    types = np.zeros_like(ids)
    if config.get("type_vocab_size", 2) > 1:
        types[:, 5:] = 1
    return {"input_word_ids": ids * mask, "input_mask": mask,
            "input_type_ids": types * mask}


def _training_model(config):
    """The encoder with a regression loss on every position's output (plus
    the pooled output, broadcast, where the family has one), so every encoder
    variable gets a gradient; plain SGD makes the update the gradient
    itself."""
    import keras

    from tfbert.config import BertConfig
    from tfbert.models import BertEncoder

    encoder = BertEncoder(BertConfig(**config))
    outputs = encoder.output
    output = outputs["sequence_output"]
    if "pooled_output" in outputs:
        output = output + keras.ops.expand_dims(outputs["pooled_output"], 1)
    model = keras.Model(encoder.input, output)
    model.encoder = encoder
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    return model


def _run(config, weights_in, directory):
    """Forward pass, then one training step; writes outputs.npz and the
    updated weights to `directory`."""
    import keras

    inputs = _inputs(config)
    model = _training_model(config)
    if weights_in is not None:
        model.load_weights(weights_in)
    else:
        model.save_weights(os.path.join(directory, "initial.weights.h5"))
    sequence_output = np.asarray(model.predict_on_batch(inputs))
    first_tokens = {}
    if keras.backend.backend() == "tensorflow":
        from tfbert.inference import EncoderInference

        first_tokens = dict(
            first_token=np.asarray(EncoderInference(model.encoder)(
                inputs, first_token_only=True)["sequence_output"]),
            first_token_full=np.asarray(model.encoder(
                inputs, training=False)["sequence_output"][:, :1]))
    target = np.random.default_rng(1).normal(size=sequence_output.shape)
    loss = float(model.train_on_batch(inputs, target.astype("float32")))
    np.savez(os.path.join(directory, "outputs.npz"),
             sequence_output=sequence_output, loss=loss, **first_tokens,
             **{f"w{i}": np.asarray(w) for i, w in
                enumerate(model.get_weights())})


@pytest.fixture(scope="module")
def backend_runs(tmp_path_factory):
    """Every family's run under TensorFlow (here) and under JAX (all of them
    in one subprocess, which pays JAX's start-up once): family -> (TF
    directory, JAX directory)."""
    pytest.importorskip("jax")
    import keras

    assert keras.backend.backend() == "tensorflow"
    runs, jobs = {}, []
    for family, config in FAMILY_CONFIGS.items():
        tf_dir = tmp_path_factory.mktemp(f"{family}_tensorflow")
        jax_dir = tmp_path_factory.mktemp(f"{family}_jax")
        keras.utils.set_random_seed(0)
        _run(config, None, str(tf_dir))
        runs[family] = tf_dir, jax_dir
        jobs.append([config, str(tf_dir / "initial.weights.h5"), str(jax_dir)])
    result = subprocess.run(
        [sys.executable, __file__, json.dumps(jobs)],
        capture_output=True, text=True, timeout=600,
        env=dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2",
                 JAX_PLATFORMS="cpu", PYTHONPATH=REPO_ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILY_CONFIGS))
def test_tensorflow_and_jax_backends_agree(family, backend_runs):
    config = FAMILY_CONFIGS[family]
    tf_dir, jax_dir = backend_runs[family]
    tf_out = np.load(tf_dir / "outputs.npz")
    jax_out = np.load(jax_dir / "outputs.npz")
    real = _inputs(config)["input_mask"].astype(bool)
    np.testing.assert_allclose(jax_out["sequence_output"][real],
                               tf_out["sequence_output"][real], atol=1e-5)
    np.testing.assert_allclose(tf_out["first_token"],
                               tf_out["first_token_full"], atol=1e-5)
    np.testing.assert_allclose(jax_out["loss"], tf_out["loss"], rtol=1e-5)
    names = [name for name in tf_out.files if name.startswith("w")]
    assert names and sorted(names) == sorted(
        name for name in jax_out.files if name.startswith("w"))
    initial = _training_model(config)
    initial.load_weights(tf_dir / "initial.weights.h5")
    unmoved = []
    for i, variable in enumerate(initial.weights):
        before = np.asarray(variable)
        after_tf, after_jax = tf_out[f"w{i}"], jax_out[f"w{i}"]
        np.testing.assert_allclose(after_jax - before, after_tf - before,
                                   atol=1e-6, err_msg=variable.path)
        if np.array_equal(after_tf, before):
            unmoved.append(variable.path)
    # The step changed every weight but perhaps the attention key biases
    # (softmax is invariant to a score added to every key alike, so their
    # gradient is 0 up to rounding): the comparison above is not between two
    # untouched copies.
    assert all(path.endswith("/key/bias") for path in unmoved), unmoved


if __name__ == "__main__":
    for config, weights_in, directory in json.loads(sys.argv[1]):
        _run(config, weights_in, directory)


_WITHOUT_TENSORFLOW = """
import runpy, sys
class NoTensorFlow:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "tensorflow":
            raise ImportError("the GPU machines have no TensorFlow")
sys.meta_path.insert(0, NoTensorFlow())
sys.argv = ["benchmarks/gpu_mixed_precision.py", "--models=bert-tiny-uncased",
            "--policies=mixed_float16", "--steps=2", "--batch_size=4",
            "--seq_length=16"]
runpy.run_path("benchmarks/gpu_mixed_precision.py", run_name="__main__")
"""


@pytest.mark.slow
def test_gpu_benchmark_runs_under_jax_without_tensorflow():
    """The numeric model imports no TensorFlow: the GPU benchmark's CPU
    smoke run (tiny shape, 2 steps; float32 without XLA and mixed_float16,
    loss scaling included, with it) works with TensorFlow unimportable."""
    pytest.importorskip("jax")
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TENSORFLOW], capture_output=True,
        text=True, timeout=500, cwd=REPO_ROOT,
        env=dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu",
                 PYTHONPATH=REPO_ROOT))
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()
            if line.startswith("{")]
    assert [(row["policy"], row["xla"]) for row in rows] == [
        ("float32", False), ("mixed_float16", True)]
    assert all(row["finite"] for row in rows)
    assert rows[1]["optimizer"] == "LossScaleOptimizer"
