"""Mixed precision and XLA of tfbert's encoders on a GPU.

    KERAS_BACKEND=jax python -m benchmarks.gpu_mixed_precision --steps=30

The lent GPU machines have JAX but no TensorFlow, and a TensorFlow wheel is
far larger than what can be carried to them. tfbert's numeric model (layers
and models) is written in `keras.ops` only, so this script loads those
modules without the package's TensorFlow-bound parts (tokenizer, CRF) and
runs them on Keras's JAX backend, where `jit_compile=True` is XLA.

Models are preset names (`tfbert.presets`), built with random weights: every
family's base shape, or any BERT shape. For each model and dtype policy it
reports forward and training throughput (batch 32 x 128 unless
--batch_size/--seq_length), whether outputs and losses are finite, the max
abs difference of `sequence_output` from float32 without XLA on the same
weights, and the setting's wall time (compilation included).
"""

import importlib
import json
import os
import sys
import time
import types

import numpy as np
from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAMILY_MODULES = ("albert_encoder", "distilbert_encoder", "electra_encoder",
                  "roberta_encoder")
FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_integer("steps", 20, "Timed steps per setting (XLA runs; "
                         "eager runs time a tenth of them, at least 2).")
    # bert-tiny-uncased --steps=2 --batch_size=4 --seq_length=16 is the CPU
    # smoke run of the script itself.
    flags.DEFINE_list("models", ["minilm-l6-h384-uncased", "bert-base-uncased"],
                      "Presets to run (random weights), e.g. "
                      "distilbert-base-uncased, roberta-base, "
                      "electra-base-discriminator, albert-base-v2.")
    flags.DEFINE_list("policies", ["float32", "mixed_bfloat16",
                                   "mixed_float16"],
                      "Dtype policies to run under XLA; float32 without XLA "
                      "always runs first, as the reference.")
    flags.DEFINE_integer("batch_size", 32, "Sequences per step.")
    flags.DEFINE_integer("seq_length", 128, "Tokens per sequence.")
    flags.DEFINE_string("out", None,
                        "Directory for gpu_mixed_precision.json (optional).")


def _import_numeric_model():
    """Imports tfbert's presets, encoders and classifier without running
    tfbert/__init__.py (which imports TensorFlow for the tokenizer)."""
    for name in ("tfbert", "tfbert.models"):
        module = types.ModuleType(name)
        module.__path__ = [os.path.join(ROOT, *name.split("."))]
        sys.modules[name] = module
    for name in FAMILY_MODULES:  # each registers its family
        importlib.import_module(f"tfbert.models.{name}")
    from tfbert import families, presets
    from tfbert.models.bert_classifier import BertClassifier

    def encoder_class(name):
        return families.family_of(name).encoder_class

    return presets, encoder_class, BertClassifier


def _inputs(batch, seq, config, rng):
    ids = rng.integers(5, config.vocab_size, (batch, seq)).astype("int32")
    mask = np.ones((batch, seq), "int32")
    mask[batch // 2:, seq * 3 // 4:] = 0  # some padding
    types_ = np.zeros((batch, seq), "int32")
    if config.type_vocab_size > 1:
        types_[:, seq // 2:] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types_}


def _time(fn, steps, warmup=3):
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - start) / steps


def _build(presets, encoder_class, classifier_class, name):
    """(encoder, 2-class classifier) of preset `name`, random weights."""
    import dataclasses

    preset = presets.get_preset(name)
    if preset is None:
        raise app.UsageError(f"--models: {name!r} is not a preset; see "
                             "tfbert.presets.PRESETS")
    cls = encoder_class(name)
    config = preset.config
    if cls.classification_activation is not None:
        # The classifier reads the first token through its own dense layer
        # (as HF's does), so the encoder needs no pooler.
        config = dataclasses.replace(config, use_pooler=False)
    encoder = cls(config)
    return encoder, classifier_class(encoder, 2)


def main(argv):
    del argv
    import keras

    presets, encoder_class, classifier_class = _import_numeric_model()
    batch, seq, steps = FLAGS.batch_size, FLAGS.seq_length, FLAGS.steps
    runs = [("float32", False)] + [(policy, True) for policy in FLAGS.policies]
    results = []
    for name in FLAGS.models:
        rng = np.random.default_rng(0)
        reference = weights = None
        for policy, xla in runs:
            started = time.perf_counter()
            keras.mixed_precision.set_global_policy(policy)
            keras.utils.set_random_seed(1)
            encoder, classifier = _build(presets, encoder_class,
                                         classifier_class, name)
            if weights is None:
                weights = classifier.get_weights()
                features = _inputs(batch, seq, encoder.config, rng)
                labels = rng.integers(0, 2, batch).astype("int32")
            classifier.set_weights(weights)
            # Time a model that returns one vector per sequence, so the
            # figure is compute, not the copy of every layer's states to host.
            outputs = encoder.output
            first = (outputs["pooled_output"] if "pooled_output" in outputs
                     else outputs["sequence_output"][:, 0])
            pooled = keras.Model(encoder.input, first)
            pooled.compile(jit_compile=xla)
            timed_steps = steps if xla else max(2, steps // 10)
            forward = _time(lambda: pooled.predict_on_batch(features),
                            timed_steps)
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
                    features, labels))), timed_steps)
            row = {
                "model": name, "policy": policy, "xla": xla,
                "forward_seq_per_s": round(batch / forward, 1),
                "train_seq_per_s": round(batch / train, 1),
                "output_dtype": str(output.dtype),
                "finite": bool(np.isfinite(output).all()
                               and np.isfinite(losses).all()),
                "max_abs_diff_vs_float32": round(diff, 5),
                "optimizer": type(classifier.optimizer).__name__,
                "seconds": round(time.perf_counter() - started, 1),
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
