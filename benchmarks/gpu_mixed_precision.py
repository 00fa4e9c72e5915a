"""Mixed precision and XLA of tfbert's encoder on a GPU.

    KERAS_BACKEND=jax python -m benchmarks.gpu_mixed_precision --steps=30

The lent GPU machines have JAX but no TensorFlow, and a TensorFlow wheel is
far larger than what can be carried to them. tfbert's numeric model (layers
and models) is written in `keras.ops` only, so this script loads those
modules without the package's TensorFlow-bound parts (tokenizer, CRF) and
runs them on Keras's JAX backend, where `jit_compile=True` is XLA. For each
model shape and dtype policy it reports forward and training throughput
(batch 32 x 128 unless --batch_size/--seq_length), whether outputs and losses are finite, and the max abs
difference of `sequence_output` from float32 on the same weights.
"""

import json
import os
import sys
import time
import types

import numpy as np
from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# "tiny" is a CPU smoke run of the script itself:
# --shapes=tiny --steps=2 --batch_size=4 --seq_length=16.
SHAPES = {"tiny": dict(hidden_size=32, num_layers=2, num_heads=2,
                       intermediate_size=64),
          "minilm-l6-h384": dict(hidden_size=384, num_layers=6, num_heads=12,
                                 intermediate_size=1536),
          "bert-base": dict(hidden_size=768, num_layers=12, num_heads=12,
                            intermediate_size=3072)}
FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_integer("steps", 20, "Timed steps per setting (XLA runs; "
                         "eager runs time a tenth of them, at least 2).")
    flags.DEFINE_list("shapes", ["minilm-l6-h384", "bert-base"],
                      f"Model shapes to run, of {', '.join(SHAPES)}.")
    flags.DEFINE_integer("batch_size", 32, "Sequences per step.")
    flags.DEFINE_integer("seq_length", 128, "Tokens per sequence.")
    flags.DEFINE_string("out", None,
                        "Directory for gpu_mixed_precision.json (optional).")


def _import_numeric_model():
    """Imports tfbert.config/layers/models' encoder and classifier without
    running tfbert/__init__.py (which imports TensorFlow for the tokenizer)."""
    for name in ("tfbert", "tfbert.models"):
        module = types.ModuleType(name)
        module.__path__ = [os.path.join(ROOT, *name.split("."))]
        sys.modules[name] = module
    from tfbert.config import BertConfig
    from tfbert.models.bert_classifier import BertClassifier
    from tfbert.models.bert_encoder import BertEncoder
    return BertConfig, BertEncoder, BertClassifier


def _inputs(batch, seq, vocab, rng):
    ids = rng.integers(1000, vocab, (batch, seq)).astype("int32")
    mask = np.ones((batch, seq), "int32")
    mask[batch // 2:, seq * 3 // 4:] = 0  # some padding
    types_ = np.zeros((batch, seq), "int32")
    types_[:, seq // 2:] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types_}


def _time(fn, steps, warmup=3):
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - start) / steps


def main(argv):
    del argv
    import keras

    BertConfig, BertEncoder, BertClassifier = _import_numeric_model()
    batch, seq = FLAGS.batch_size, FLAGS.seq_length
    steps = FLAGS.steps
    rng = np.random.default_rng(0)
    results = []
    for shape_name, shape in SHAPES.items():
        if shape_name not in FLAGS.shapes:
            continue
        config = BertConfig(**shape)
        features = _inputs(batch, seq, config.vocab_size, rng)
        labels = rng.integers(0, 2, batch).astype("int32")
        reference = None
        weights = None
        runs = [("float32", False), ("float32", True),
                ("mixed_bfloat16", True), ("mixed_float16", True)]
        for policy, xla in runs:
            keras.mixed_precision.set_global_policy(policy)
            keras.utils.set_random_seed(1)
            encoder = BertEncoder(config)
            classifier = BertClassifier(encoder, 2)
            if weights is None:
                weights = classifier.get_weights()
            classifier.set_weights(weights)
            # Time a model that returns only the pooled output, so the
            # figure is compute, not the copy of every layer's states to host.
            pooled = keras.Model(encoder.input,
                                 encoder.output["pooled_output"])
            pooled.compile(jit_compile=xla)
            forward = _time(lambda: pooled.predict_on_batch(features),
                            steps if xla else max(2, steps // 10))
            encoder.compile(jit_compile=xla)
            output = encoder.predict_on_batch(features)["sequence_output"]
            output = np.asarray(output, np.float32)
            real = features["input_mask"].astype(bool)
            if reference is None:
                reference = output
            diff = float(np.abs(output[real] - reference[real]).max())
            classifier.compile(
                optimizer=keras.optimizers.AdamW(1e-5),
                loss=keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True),
                jit_compile=xla)
            losses = []
            train = _time(
                lambda: losses.append(float(classifier.train_on_batch(
                    features, labels))),
                steps if xla else max(2, steps // 10))
            row = {
                "model": shape_name, "policy": policy, "xla": xla,
                "forward_seq_per_s": round(batch / forward, 1),
                "train_seq_per_s": round(batch / train, 1),
                "output_dtype": str(output.dtype),
                "finite": bool(np.isfinite(output).all()
                               and np.isfinite(losses).all()),
                "max_abs_diff_vs_float32": round(diff, 5),
                "loss_scaled": type(classifier.optimizer).__name__,
            }
            print(json.dumps(row), flush=True)
            results.append(row)
    keras.mixed_precision.set_global_policy("float32")
    if FLAGS.out:
        with open(os.path.join(FLAGS.out, "gpu_mixed_precision.json"),
                  "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    define_flags()
    app.run(main)
