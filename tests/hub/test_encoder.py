"""The TF Hub encoder export: `hub.load` and `hub.KerasLayer` (tf_keras,
also inside TF Model Garden's classifier) against tfbert's own models."""

import numpy as np
import pytest
import tensorflow as tf

from tfbert.text import BertPreprocessor

# Every test reads the TF Hub exports of the `tfbert_hub` fixture (~40 s on
# a busy machine to write).
pytestmark = pytest.mark.slow

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def loaded(tfbert_hub):
    import tensorflow_hub as hub

    return hub.load(str(tfbert_hub["encoder_dir"]))


@pytest.fixture(scope="module")
def inputs(tfbert_hub, sst2_sentences):
    return BertPreprocessor(tfbert_hub["tokenizer"], seq_length=32)(
        tf.constant(sst2_sentences[:16]))


def test_outputs_equal_tfbert(loaded, tfbert_hub, inputs):
    """At inference the export skips padding: real positions as the Keras
    model computes them, zeros at padding (also past the batch's longest
    row, where trailing columns are cut)."""
    inputs = {name: tf.pad(value, [[0, 0], [0, 4]])
              for name, value in inputs.items()}
    got = loaded(inputs, training=False)
    expected = tfbert_hub["encoder"](inputs)
    real = inputs["input_mask"].numpy().astype(bool)
    assert set(got) == {"pooled_output", "sequence_output", "encoder_outputs",
                        "default"}
    np.testing.assert_allclose(got["pooled_output"], expected["pooled_output"],
                               atol=TOLERANCE)
    np.testing.assert_array_equal(got["default"], got["pooled_output"])
    assert len(got["encoder_outputs"]) == len(expected["encoder_outputs"]) == 2
    for ours, reference in zip(
            [got["sequence_output"], *got["encoder_outputs"]],
            [expected["sequence_output"], *expected["encoder_outputs"]]):
        assert ours.shape == reference.shape
        np.testing.assert_allclose(np.asarray(ours)[real],
                                   np.asarray(reference)[real],
                                   atol=TOLERANCE)
        assert not np.asarray(ours)[~real].any()


def test_mlm_logits_equal_pretrainer(loaded, tfbert_hub, inputs):
    positions = tf.constant(np.random.default_rng(0).integers(
        1, 8, size=(16, 3)), tf.int32)
    got = loaded.mlm(dict(inputs, masked_lm_positions=positions),
                     training=False)
    expected = tfbert_hub["pretrainer"](
        dict(inputs, masked_lm_positions=positions))["masked_lm_logits"]
    assert got["mlm_logits"].shape == (16, 3, tfbert_hub["tokenizer"].vocab_size)
    np.testing.assert_allclose(got["mlm_logits"], expected, atol=TOLERANCE)
    np.testing.assert_allclose(got["pooled_output"],
                               loaded(inputs)["pooled_output"], atol=TOLERANCE)


def test_reusable_saved_model_attributes(loaded, tfbert_hub, inputs):
    encoder = tfbert_hub["encoder"]
    assert len(loaded.trainable_variables) == len(encoder.trainable_variables)
    # The dropout seed states are variables too (non-trainable, int).
    assert len(loaded.variables) == len(encoder.variables)
    assert len(loaded.variables) > len(loaded.trainable_variables)
    assert list(loaded.regularization_losses) == []
    assert bool(loaded.do_lower_case.numpy()) is True
    vocab = tf.io.read_file(loaded.vocab_file.asset_path).numpy().decode()
    assert vocab.split("\n")[:tfbert_hub["tokenizer"].vocab_size] == list(
        tfbert_hub["tokenizer"].vocabulary)
    # training=True is traced too: dropout is on.
    trained = loaded(inputs, training=True)["sequence_output"]
    assert not np.allclose(trained, loaded(inputs)["sequence_output"],
                           atol=1e-3)


def test_from_pretrained_reads_the_export_back(tfbert_hub, inputs):
    from tfbert import BertEncoder, BertTokenizer
    from tfbert.checkpoints import load_pretrainer

    directory = tfbert_hub["encoder_dir"]
    encoder = BertEncoder.from_pretrained(directory)
    assert encoder.config == tfbert_hub["encoder"].config
    np.testing.assert_array_equal(
        encoder(inputs)["sequence_output"],
        tfbert_hub["encoder"](inputs)["sequence_output"])
    positions = tf.constant([[1, 2]] * 16, tf.int32)
    np.testing.assert_array_equal(
        load_pretrainer(directory)(
            dict(inputs, masked_lm_positions=positions))["masked_lm_logits"],
        tfbert_hub["pretrainer"](
            dict(inputs, masked_lm_positions=positions))["masked_lm_logits"])
    tokenizer = BertTokenizer.from_pretrained(directory)
    assert tokenizer.lowercase
    assert tokenizer.vocabulary == tfbert_hub["tokenizer"].vocabulary


def test_export_refuses_bad_arguments(tfbert_hub, tmp_path):
    from tfbert import BertTokenizer
    from tfbert.hub import export_encoder

    encoder, tokenizer = tfbert_hub["encoder"], tfbert_hub["tokenizer"]
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    with pytest.raises(FileExistsError, match="not empty"):
        export_encoder(encoder, tokenizer, tmp_path / "full")
    with pytest.raises(ValueError, match="has 5 tokens but the encoder"):
        export_encoder(encoder, BertTokenizer(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]), tmp_path / "new")


_FINE_TUNE_CHECK = """
import json, sys
import numpy as np
import tensorflow_hub as hub
saved = {v.name: v.numpy() for v in hub.load(sys.argv[1]).trainable_variables}
layer_weights = {w.name: w.numpy() for w in ENCODER_LAYER.trainable_weights}
changed = sorted(name for name, value in saved.items()
                 if not np.array_equal(layer_weights[name], value))
print(json.dumps({"saved": len(saved), "trainable": len(layer_weights),
                  "changed": changed}))
"""


def _doc_snippet():
    """The tf_keras fine-tuning example of docs/tfhub.md."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "tfhub.md"
            ).read_text(encoding="utf-8")
    start = text.index("```python\n", text.index("## Fine-tuning in tf_keras"))
    return text[start + len("```python\n"):text.index("```", start + 10)]


def test_doc_example_fine_tunes_the_encoder(tfbert_hub, run_tf_keras):
    snippet = _doc_snippet()
    assert len(snippet.strip().splitlines()) <= 12
    code = (snippet.replace("saved_models/hub/minilm_encoder", "{encoder}")
            .replace("saved_models/hub/minilm_preprocess", "{preprocess}"))
    code = code.format(encoder=tfbert_hub["encoder_dir"],
                       preprocess=tfbert_hub["preprocessor_dir"])
    result = run_tf_keras(
        code + _FINE_TUNE_CHECK.replace("ENCODER_LAYER", "encoder"),
        tfbert_hub["encoder_dir"])
    assert result["trainable"] == result["saved"] > 0
    # One step moves every encoder weight (all get a gradient).
    assert len(result["changed"]) == result["saved"]


_MODEL_GARDEN_CLASSIFIER = """
import sys
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras
from official.nlp.modeling import models

ENCODER_LAYER = hub.KerasLayer(sys.argv[1], trainable=True)
inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
          for name in ("input_word_ids", "input_mask", "input_type_ids")}
network = tf_keras.Model(inputs, ENCODER_LAYER(inputs))
classifier = models.BertClassifier(network, num_classes=2)
classifier.compile(
    tf_keras.optimizers.Adam(1e-3),
    tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
data = {"input_word_ids": np.array([[101, 2307, 102, 0], [101, 2919, 2143, 102]], np.int32),
        "input_mask": np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.int32),
        "input_type_ids": np.zeros((2, 4), np.int32)}
classifier.fit(data, np.array([1, 0]), epochs=1, verbose=0)
"""


def test_model_garden_classifier_fine_tunes_the_encoder(tfbert_hub,
                                                        run_tf_keras):
    result = run_tf_keras(_MODEL_GARDEN_CLASSIFIER + _FINE_TUNE_CHECK,
                          tfbert_hub["encoder_dir"])
    assert result["trainable"] == result["saved"] > 0
    assert len(result["changed"]) == result["saved"]
