"""What a task model offers from Python: `tfbert.export.export_for_serving` (the export
the task programs write), label names in its config, `.keras` files as
checkpoints, saving without optimizer state, and
`BertTextClassifier.classify`."""

import contextlib
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

import tfbert
from tfbert.export import export_for_serving
from tests.export.conftest import SEQ_LENGTH, tiny_encoder
from tests.tasks.conftest import parse_task_flags, write_glue_subset
from tfbert.models import BertClassifier, BertTextClassifier
from tfbert.tasks import runner
from tfbert.tasks.glue import GlueTask
from tfbert.text import BertPreprocessor

LABEL_NAMES = ["negative", "positive"]
TEXTS = ["a fine film", "a dull film", "great acting", "awful plot"]

# Loads an export as TF Serving does (TensorFlow and tensorflow-text only)
# and classifies argv[2] (a JSON list of str).
SERVE_TEXTS = r"""
import json, sys
import tensorflow as tf
import tensorflow_text
served = tf.saved_model.load(sys.argv[1]).signatures["serving_default"](
    sentence=tf.constant(json.loads(sys.argv[2])))
print(json.dumps({"label": [v.decode() for v in served["label"].numpy()],
                  "probabilities": served["probabilities"].numpy().tolist()}))
"""


@pytest.fixture(scope="module")
def text_classifier(tokenizer):
    """A tiny `BertTextClassifier` with label names, as a training run
    leaves it: compiled, with AdamW slots."""
    model = BertTextClassifier(
        BertPreprocessor(tokenizer, seq_length=SEQ_LENGTH,
                         name="preprocessor"),
        BertClassifier(tiny_encoder(tokenizer), 2, label_names=LABEL_NAMES,
                       name="classifier"))
    model.compile()
    model.optimizer.build(model.trainable_variables)
    return model


@pytest.fixture(scope="module")
def saved(text_classifier, tmp_path_factory):
    """`(with optimizer, without optimizer)` .keras files of the model."""
    directory = tmp_path_factory.mktemp("saved")
    full, slim = directory / "full.keras", directory / "slim.keras"
    text_classifier.save(full)
    text_classifier.save(slim, include_optimizer=False)
    return full, slim


def _softmax(logits):
    logits = np.asarray(logits, np.float64)
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def test_classify_names_the_likeliest_class_of_the_softmax(text_classifier):
    probabilities = _softmax(text_classifier.predict(TEXTS, verbose=0))
    results = text_classifier.classify(TEXTS)
    assert [r["label"] for r in results] == [
        LABEL_NAMES[i] for i in probabilities.argmax(-1)]
    for result, row in zip(results, probabilities):
        np.testing.assert_allclose(
            [result["probabilities"][name] for name in LABEL_NAMES], row,
            atol=1e-6)
        assert result["score"] == pytest.approx(row.max(), abs=1e-6)
    # One text alone is padded to its own length, not the batch's longest:
    # the same classification, to float32 rounding.
    alone = text_classifier.classify(TEXTS[0])
    assert alone["label"] == results[0]["label"]
    assert alone["score"] == pytest.approx(results[0]["score"], abs=1e-6)
    assert alone["probabilities"] == pytest.approx(
        results[0]["probabilities"], abs=1e-6)


def test_label_names_must_match_the_classes(tokenizer):
    with pytest.raises(ValueError, match="3 label names given for "
                                         "num_classes=2"):
        BertClassifier(tiny_encoder(tokenizer), 2, label_names=["a", "b", "c"])


@pytest.mark.slow
def test_text_classifier_export_serves_its_labels(text_classifier, tmp_path,
                                                  run_fresh_python):
    path = export_for_serving(text_classifier, str(tmp_path / "films"))
    assert path == str(tmp_path / "films" / "1")
    assert os.path.isfile(os.path.join(path, "assets", "vocab.txt"))
    assert os.path.isfile(os.path.join(path, "assets.extra",
                                       "tf_serving_warmup_requests"))
    served = run_fresh_python(SERVE_TEXTS, path, json.dumps(TEXTS))
    expected = text_classifier.classify(TEXTS)
    assert served["label"] == [r["label"] for r in expected]
    np.testing.assert_allclose(
        served["probabilities"],
        [[r["probabilities"][name] for name in LABEL_NAMES]
         for r in expected], atol=1e-5)


def test_saving_without_optimizer_state(text_classifier, saved):
    full, slim = saved
    slots = sum(int(np.prod(v.shape)) * 4
                for v in text_classifier.optimizer.variables)
    assert os.path.getsize(full) - os.path.getsize(slim) > 0.9 * slots
    reloaded = keras.models.load_model(slim)
    assert getattr(reloaded, "optimizer", None) is None
    assert reloaded.label_names == LABEL_NAMES
    np.testing.assert_allclose(reloaded.predict(TEXTS, verbose=0),
                               text_classifier.predict(TEXTS, verbose=0),
                               atol=1e-6)


def _same_weights(a, b):
    return len(a.weights) == len(b.weights) and all(
        np.array_equal(x, y) for x, y in zip(a.get_weights(), b.get_weights()))


def test_keras_file_is_a_checkpoint(text_classifier, saved, tokenizer):
    encoder = text_classifier.classifier.encoder
    for path in saved:
        assert _same_weights(tfbert.Encoder.from_pretrained(path), encoder)
    assert tfbert.BertTokenizer.from_pretrained(
        saved[1]).vocabulary == tokenizer.vocabulary
    rebuilt = BertTextClassifier.from_pretrained(saved[1], num_classes=3,
                                                 seq_length=SEQ_LENGTH)
    assert _same_weights(rebuilt.classifier.encoder, encoder)


def test_keras_file_as_init_checkpoint(text_classifier, saved, tmp_path,
                                       shared_data_dir):
    data = write_glue_subset(shared_data_dir, "sst2", tmp_path / "data",
                             n_train=8, n_dev=0)
    task = parse_task_flags(GlueTask, [
        "--task=sst2", f"--data_dir={data}", f"--init_checkpoint={saved[1]}",
        f"--model_dir={tmp_path / 'model'}", "--do_train",
        f"--max_seq_length={SEQ_LENGTH}"])
    with contextlib.ExitStack() as stack:
        prepared = runner.prepare(task, stack)
    assert _same_weights(prepared.model.encoder,
                         text_classifier.classifier.encoder)
    assert prepared.model.label_names == ["negative", "positive"]


@pytest.mark.slow
@pytest.mark.parametrize("kind, options, inputs", [
    ("squad", dict(max_seq_length=32, doc_stride=8, max_query_length=8,
                   max_answer_length=5),
     dict(question=["Who sleeps?"], context=["Ann sleeps in the garden."])),
    ("ner", dict(max_seq_length=SEQ_LENGTH),
     dict(text=["Ann lives in Paris"]))])
def test_span_and_token_models_export_as_their_modules(
        kind, options, inputs, serving_modules, tokenizer, tmp_path):
    # The module the export tests build by hand around the same model.
    module = serving_modules[kind]
    path = export_for_serving(module.model, str(tmp_path / kind),
                              tokenizer=tokenizer, **options)
    inputs = {name: tf.constant(value) for name, value in inputs.items()}
    served = tf.saved_model.load(path).signatures["serving_default"](**inputs)
    expected = module.serve_text(*(inputs[name]
                                   for name in module.text_inputs))
    assert sorted(served) == sorted(expected)
    for name, value in expected.items():
        if value.dtype == tf.string:
            np.testing.assert_array_equal(served[name], value)
        else:
            np.testing.assert_allclose(served[name], value, atol=1e-5)
