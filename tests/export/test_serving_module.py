"""What `ServingModule` gives every export: signature names and specs,
warmup requests, and clear errors for bad client input."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

from tests.export.conftest import replay_warmup

KINDS = ["classifier", "regressor", "squad", "ner"]


@pytest.fixture(scope="module")
def loaded(exports):
    return {kind: tf.saved_model.load(path) for kind, path in exports.items()}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow
def test_one_naming_scheme_and_fixed_length_token_ids(kind, loaded,
                                                      serving_modules):
    signatures = loaded[kind].signatures
    assert sorted(signatures) == ["serve_token_ids", "serving_default"]
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
