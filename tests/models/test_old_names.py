"""The task models' former names: `.keras` files written before the rename
load as the renamed classes, and compute what they computed then.

`old_keras/` holds tiny models that the code of commit 8e7d1dd (before the
task models were named by role) saved, with the outputs that code computed
on fixed inputs (`old_keras/outputs.json`); `old_keras/write_fixtures.py`
wrote them, run against a checkout of that commit."""

import json
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfbert

FIXTURES = Path(__file__).parent / "old_keras"
RENAMED = {"BertClassifier": tfbert.SequenceClassifier,
           "BertSpanLabeler": tfbert.SpanLabeler,
           "BertTokenClassifier": tfbert.TokenClassifier,
           "BertPretrainer": tfbert.MaskedLMPretrainer,
           "BertTextClassifier": tfbert.TextClassifier}


@pytest.fixture(scope="module")
def recorded():
    return json.loads((FIXTURES / "outputs.json").read_text())


@pytest.mark.parametrize("old_name", sorted(RENAMED))
def test_old_files_load_as_the_renamed_class(old_name, recorded):
    assert getattr(tfbert, old_name) is RENAMED[old_name]
    model = keras.models.load_model(FIXTURES / f"{old_name}.keras")
    assert isinstance(model, RENAMED[old_name])
    if old_name == "BertTextClassifier":
        outputs = {"output": model(tf.constant(recorded["texts"]))}
    else:
        feed = {name: np.array(value, np.int32)
                for name, value in recorded["inputs"].items()}
        if old_name == "BertPretrainer":
            feed["masked_lm_positions"] = np.array(
                recorded["masked_lm_positions"], np.int32)
        outputs = model(feed, training=False)
        if not isinstance(outputs, dict):
            outputs = {"output": outputs}
    expected = recorded["outputs"][old_name]
    assert sorted(outputs) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(np.asarray(outputs[name]), value,
                                   atol=1e-6)


def test_models_built_by_either_name_save_the_new_name(tmp_path):
    encoder = tfbert.BertEncoder(tfbert.BertConfig(
        vocab_size=16, hidden_size=8, num_layers=1, num_heads=2,
        intermediate_size=8, max_position_embeddings=8))
    model = tfbert.BertClassifier(encoder, 2)
    assert type(model) is tfbert.SequenceClassifier
    model.save(tmp_path / "classifier.keras")
    config = json.loads(_config_of(tmp_path / "classifier.keras"))
    assert config["registered_name"] == "tfbert>SequenceClassifier"
    assert type(keras.models.load_model(tmp_path / "classifier.keras")) is (
        tfbert.SequenceClassifier)


def _config_of(path):
    with zipfile.ZipFile(path) as archive:
        return archive.read("config.json").decode("utf-8")
