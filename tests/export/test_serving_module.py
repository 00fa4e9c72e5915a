"""What `ServingModule` gives every export: signature names and specs,
warmup requests, clear errors for bad client input, and its weights read
back from the SavedModel."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

from tests.export.conftest import replay_warmup
from tfbert import BertConfig, BertEncoder, BertPreprocessor, BertTokenizer
from tfbert.export import export_saved_model
from tfbert.export.classifier_serving import ClassifierServingModule
from tfbert.export.serving_module import exported_weights
from tfbert.models import BertClassifier

KINDS = ["classifier", "regressor", "squad", "ner"]


@pytest.fixture(scope="module")
def loaded(exports):
    return {kind: tf.saved_model.load(path) for kind, path in exports.items()}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow
def test_one_naming_scheme_and_fixed_length_token_ids(kind, loaded,
                                                      serving_modules):
    signatures = loaded[kind].signatures
    # Classifiers also answer TF Serving's Classify/Regress API.
    example_signature = {"classifier": ["classify"],
                         "regressor": ["regress"]}.get(kind, [])
    assert sorted(signatures) == sorted(
        ["serve_token_ids", "serving_default", *example_signature])
    _, specs = signatures["serve_token_ids"].structured_input_signature
    length = serving_modules[kind].max_seq_length
    assert {name: (spec.shape.as_list(), spec.dtype)
            for name, spec in specs.items()} == {
        name: ([None, length], tf.int32)
        for name in ("input_word_ids", "input_mask", "input_type_ids")}
    _, text_specs = signatures["serving_default"].structured_input_signature
    assert sorted(text_specs) == sorted(serving_modules[kind].text_inputs)


@pytest.mark.parametrize("kind", KINDS)
def test_warmup_requests_cover_every_signature_and_replay(kind, exports,
                                                          loaded):
    replayed = replay_warmup(exports[kind], loaded[kind].signatures)
    assert sorted(replayed) == sorted(loaded[kind].signatures)


@pytest.mark.parametrize("first, second", [(3, 2), (3, 1), (1, 3)])
def test_pair_inputs_of_different_batch_sizes_are_refused(first, second,
                                                          loaded):
    serve = loaded["classifier"].signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="inputs sentence1 and sentence2 must have the same "
                             "batch size"):
        serve(sentence1=tf.constant(["a"] * first),
              sentence2=tf.constant(["b"] * second))


@pytest.mark.parametrize("kind, inputs, bad", [
    ("classifier", {"sentence1": ["fine", "ok"],
                    "sentence2": ["fine", b"caf\xc3"]}, "sentence2"),
    ("squad", {"question": [b"\xff who?"], "context": ["Me."]}, "question"),
    ("squad", {"question": ["Who?"], "context": [b"M\xe9."]}, "context"),
    ("ner", {"text": ["Paris", b"\xc0\xaf"]}, "text"),
])
def test_invalid_utf8_is_refused_naming_the_input(kind, inputs, bad, loaded):
    serve = loaded[kind].signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"input {bad} is not valid UTF-8"):
        serve(**{k: tf.constant(v) for k, v in inputs.items()})


@pytest.mark.parametrize("name, value", [
    ("input_word_ids", -5), ("input_word_ids", 30522),
    ("input_mask", 2), ("input_type_ids", -1)])
def test_token_ids_out_of_range_are_refused_naming_the_input(
        name, value, loaded, serving_modules):
    length = serving_modules["ner"].max_seq_length
    inputs = {k: np.zeros([2, length], np.int32)
              for k in ("input_word_ids", "input_mask", "input_type_ids")}
    inputs["input_word_ids"][:, :2] = [101, 102]
    inputs["input_mask"][:, :2] = 1
    inputs[name][1, 1] = value
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"input {name} has values outside"):
        loaded["ner"].signatures["serve_token_ids"](
            **{k: tf.constant(v) for k, v in inputs.items()})
    inputs[name][1, 1] = 1  # the same request, in range, is answered
    loaded["ner"].signatures["serve_token_ids"](
        **{k: tf.constant(v) for k, v in inputs.items()})


def _tiny_classifier(vocab_size, seed, hidden_size=16, num_layers=2):
    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(BertConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_layers=num_layers,
        num_heads=2, intermediate_size=32, max_position_embeddings=64))
    return BertClassifier(encoder, 2)


def _export_reader(model, tokenizer, path, shards):
    module = ClassifierServingModule(
        model, BertPreprocessor(tokenizer, seq_length=16),
        ["negative", "positive"], ("sentence",))
    version = export_saved_model(module, str(path),
                                 feed_forward_shards=shards)
    return tf.train.load_checkpoint(f"{version}/variables/variables")


@pytest.mark.parametrize("shards", [1, 2, 3])
def test_exported_weights_are_the_exported_models(shards, tmp_path,
                                                  minilm_dir):
    """Whole or as feed-forward shards in the export, the values come back
    in `model.variables` order, equal to the exported model's."""
    tokenizer = BertTokenizer(str(minilm_dir / "vocab.txt"))
    exported = _tiny_classifier(tokenizer.vocab_size, seed=0)
    reader = _export_reader(exported, tokenizer, tmp_path / "export", shards)
    fresh = _tiny_classifier(tokenizer.vocab_size, seed=1)
    values = exported_weights(fresh, reader)
    assert len(values) == len(exported.variables)
    for variable, value in zip(exported.variables, values):
        np.testing.assert_array_equal(
            value, keras.ops.convert_to_numpy(variable), err_msg=variable.path)


@pytest.mark.parametrize("other, message", [
    ({"num_layers": 1}, r"the export holds \d+ variables besides "
                        r"feed-forward shards; BertClassifier has \d+"),
    ({"hidden_size": 8}, re.escape(
        "shape (30522, 8), the export holds (30522, 16)"))])
def test_exported_weights_refuse_another_architecture(other, message,
                                                      tmp_path, minilm_dir):
    tokenizer = BertTokenizer(str(minilm_dir / "vocab.txt"))
    reader = _export_reader(_tiny_classifier(tokenizer.vocab_size, seed=0),
                            tokenizer, tmp_path / "export", shards=2)
    with pytest.raises(ValueError, match=message):
        exported_weights(
            _tiny_classifier(tokenizer.vocab_size, seed=0, **other), reader)
