"""`.keras` files written before the one packing implementation load, and
their preprocessors pack what they packed then.

`old_preprocessors/` holds two tiny pair `TextClassifier`s that the code of
commit 819ed0c saved (a `BertPreprocessor`, whose file names the module
`tfbert.text.bert_preprocessor`, and a RoBERTa-layout `Preprocessor`) with
what that code computed on fixed texts (`old_preprocessors/outputs.json`);
`old_preprocessors/write_fixtures.py` wrote them, run against a checkout of
that commit. What the packing must be is tested against HF in
test_preprocessor.py and test_bert_preprocessor.py."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfbert

FIXTURES = Path(__file__).parent / "old_preprocessors"
CLASSES = {"wordpiece": tfbert.BertPreprocessor,
           "roberta": tfbert.Preprocessor}


@pytest.fixture(scope="module")
def recorded():
    return json.loads((FIXTURES / "outputs.json").read_text())


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_old_files_load_and_pack_as_before(name, recorded, tmp_path):
    expected = recorded["outputs"][name]
    model = keras.models.load_model(FIXTURES / f"{name}.keras")
    assert type(model.preprocessor) is CLASSES[name]
    assert keras.saving.get_registered_name(CLASSES[name]) == (
        expected["registered_name"])
    texts_a = tf.constant(recorded["texts_a"])
    texts_b = tf.constant(recorded["texts_b"])
    for packed, key in ((model.preprocessor((texts_a, texts_b)), "pairs"),
                        (model.preprocessor(texts_a), "single")):
        assert {k: v.numpy().tolist() for k, v in packed.items()} == (
            expected[key]), key
    logits = model({"text_a": texts_a, "text_b": texts_b})
    np.testing.assert_allclose(np.asarray(logits), expected["logits"],
                               rtol=1e-5, atol=0)
    # Saved again by today's code, it still packs the same.
    model.save(tmp_path / "again.keras")
    again = keras.models.load_model(tmp_path / "again.keras").preprocessor
    assert type(again) is CLASSES[name]
    assert again((texts_a, texts_b))["input_word_ids"].numpy().tolist() == (
        expected["pairs"]["input_word_ids"])
