"""TextClassifier (formerly BertTextClassifier): raw strings through
fit/predict for every family, compile defaults, .keras round trips in a
fresh process, and the documented snippet."""

import ast
import json
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfbert
from tests.conftest import REPO_ROOT
from tfbert import families
from tfbert.data import glue

TEXTS = ["a fine film", "a dull film", "great acting", "awful plot",
         "truly great", "truly awful", "fine work", "dull work"]
LABELS = [1, 0, 1, 0, 1, 0, 1, 0]


@pytest.fixture(scope="module")
def classifier(tiny_checkpoint):
    keras.utils.set_random_seed(0)
    model = tfbert.BertTextClassifier.from_pretrained(
        tiny_checkpoint, num_classes=2, seq_length=16)
    model.compile()
    model.fit(TEXTS, LABELS, batch_size=4, epochs=2, verbose=0)
    return model


@pytest.mark.slow
def test_logits_are_the_classifier_on_the_preprocessed_text(classifier):
    expected = classifier.classifier(classifier.preprocessor(
        tf.constant(TEXTS[:3])))
    np.testing.assert_allclose(classifier.predict(TEXTS[:3], verbose=0),
                               expected, atol=1e-6)
    assert classifier.predict(np.array(TEXTS[:3]), verbose=0).shape == (3, 2)


def test_auto_optimizer_schedule_spans_the_fit_call(classifier):
    # 8 texts in batches of 4 for 2 epochs: 4 steps; warmup 10% of 4 = 0
    # steps, linear decay reaching 0 at step 4.
    optimizer = classifier.optimizer
    assert isinstance(optimizer, tfbert.training.AdamW)
    assert int(optimizer.iterations.numpy()) == 4
    assert float(optimizer.learning_rate.numpy()) == 0.0
    assert optimizer.weight_decay == pytest.approx(0.01)
    assert isinstance(classifier.loss, keras.losses.SparseCategoricalCrossentropy)


@pytest.mark.slow
def test_saved_model_loads_in_a_fresh_process(classifier, tmp_path,
                                              run_fresh_python):
    path = tmp_path / "classifier.keras"
    classifier.save(path)
    code = (
        "import json, sys, keras, tfbert\n"
        "model = keras.models.load_model(sys.argv[1])\n"
        "print(json.dumps({'logits': model.predict(json.loads(sys.argv[2]),"
        " verbose=0).tolist(), 'steps': int(model.optimizer.iterations),"
        " 'optimizer': type(model.optimizer).__name__}))\n")
    loaded = run_fresh_python(code, path, json.dumps(TEXTS))
    np.testing.assert_allclose(loaded["logits"],
                               classifier.predict(TEXTS, verbose=0), atol=1e-6)
    assert loaded["steps"] == 4 and loaded["optimizer"] == "AdamW"


@pytest.mark.slow
def test_pair_regression(tiny_checkpoint):
    keras.utils.set_random_seed(0)
    model = tfbert.BertTextClassifier.from_pretrained(
        tiny_checkpoint, num_classes=1, seq_length=16, is_pair=True)
    model.compile()
    assert isinstance(model.loss, keras.losses.MeanSquaredError)
    history = model.fit((TEXTS, TEXTS[::-1]), np.linspace(0, 5, 8),
                        batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    logits = model.predict((TEXTS[:2], TEXTS[2:4]), verbose=0)
    assert logits.shape == (2, 1)
    swapped = model.predict((TEXTS[2:4], TEXTS[:2]), verbose=0)
    assert np.abs(logits - swapped).max() > 0   # segment order matters


@pytest.mark.parametrize("family", ["distilbert", "roberta", "albert"])
def test_every_family_classifies_raw_text_as_its_hf_tokenizer_reads_it(
        zoo_checkpoints, family):
    """The logits of raw strings equal the classifier's on the ids HF's own
    tokenizer of the checkpoint gives (RoBERTa: byte-level BPE and
    `<s> A </s>`; ALBERT: SentencePiece)."""
    from transformers import AutoTokenizer

    directory = zoo_checkpoints[family]
    model = tfbert.TextClassifier.from_pretrained(directory, num_classes=2,
                                                  seq_length=16)
    assert isinstance(model.classifier.encoder,
                      families.get(family).encoder_class)
    ids = AutoTokenizer.from_pretrained(directory)(
        TEXTS[:3], padding="max_length", max_length=16, truncation=True,
        return_tensors="np")
    expected = model.classifier({
        "input_word_ids": ids["input_ids"].astype("int32"),
        "input_mask": ids["attention_mask"].astype("int32"),
        "input_type_ids": np.zeros_like(ids["input_ids"], "int32")},
        training=False)
    np.testing.assert_allclose(model.predict(TEXTS[:3], verbose=0),
                               expected, atol=1e-5)


def test_bad_arguments_are_clear(tiny_checkpoint, classifier):
    with pytest.raises(ValueError, match=r"seq_length must be in \[3, 128\]"):
        tfbert.BertTextClassifier.from_pretrained(
            tiny_checkpoint, num_classes=2, seq_length=2)
    with pytest.raises(ValueError, match="3 texts but 2 labels"):
        classifier.evaluate(TEXTS[:3], [0, 1], verbose=0)
    with pytest.raises(ValueError, match="not one str"):
        classifier.predict("a fine film", verbose=0)


def _documented_snippet():
    text = (REPO_ROOT / "docs" / "finetune_python.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)[0]


def test_readme_quickstart_is_the_documented_snippet():
    readme = (REPO_ROOT / "README.md").read_text()
    quickstart = readme[readme.index("## Python quickstart"):]
    snippet = re.findall(r"```python\n(.*?)```", quickstart, re.S)[0]
    assert snippet == _documented_snippet()
    assert len([line for line in snippet.splitlines() if line.strip()]) < 15


@pytest.mark.slow
def test_documented_snippet_learns_the_demo_data(tmp_path, monkeypatch,
                                                 capsys):
    # Runs the README snippet verbatim (the real MiniLM preset: a random
    # tiny encoder shows no learning signal at fine-tuning learning rates),
    # in this process: loading a .keras file in a new process after
    # `import tfbert` is test_saved_model_loads_in_a_fresh_process's case.
    monkeypatch.chdir(tmp_path)
    exec(compile(_documented_snippet(), "finetune_python.md", "exec"), {})
    printed = capsys.readouterr().out.strip().splitlines()
    metrics = ast.literal_eval(next(line for line in printed
                                    if line.startswith("{'accuracy'")))
    dev = glue.read_examples(
        glue.split_path(glue.DEMO_DATA_DIR, "sst2", "dev"), "sst2")
    majority = max(np.mean([e.label == "1" for e in dev]),
                   np.mean([e.label == "0" for e in dev]))
    assert metrics["accuracy"] >= majority + 0.25, (metrics, majority)
    # The export it wrote answered with a label name and probabilities.
    assert (tmp_path / "saved_models" / "reviews" / "1" /
            "saved_model.pb").is_file()
    served = re.fullmatch(r"\[b'(negative|positive)'\] \[\[(\S+) +(\S+) *\]\]",
                          printed[-1])
    assert served, printed[-1]
    assert float(served[2]) + float(served[3]) == pytest.approx(1, abs=1e-5)
    # The saved model (without optimizer state: compiled again to evaluate)
    # scores the same.
    model = keras.models.load_model(tmp_path / "sst2_demo.keras")
    model.compile()
    reloaded = model.evaluate([e.text_a for e in dev],
                              [int(e.label) for e in dev], return_dict=True,
                              verbose=0)
    assert reloaded["accuracy"] == pytest.approx(metrics["accuracy"])
