"""What `ServingModule` gives every export: signature names and specs,
warmup requests, clear errors for bad client input, and its weights read
back from the SavedModel."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

from tests.export.conftest import SEQ_LENGTH, replay_warmup
from tfbert import BertConfig, BertEncoder, BertPreprocessor, BertTokenizer
from tfbert.export import RequestLimits, export_saved_model
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
                        r"feed-forward shards; SequenceClassifier has \d+"),
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


# -- hostile requests: shapes and bounds, for every signature of every kind --

TEXT_INPUTS = {"classifier": ("sentence1", "sentence2"),
               "regressor": ("sentence",), "squad": ("question", "context"),
               "ner": ("text",)}
TOKEN_ID_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
LIMITS = RequestLimits()


def _texts(kind, batch=1, **overrides):
    """A request of `batch` short valid texts per input of `kind`, with
    some inputs replaced by `overrides` (name -> list, or tensor value)."""
    request = {name: ["Ann won the race."] * batch
               for name in TEXT_INPUTS[kind]}
    request.update(overrides)
    return {name: tf.constant(value) for name, value in request.items()}


def _token_ids(length, batch=1, **overrides):
    request = {name: np.zeros([batch, length], np.int32)
               for name in TOKEN_ID_INPUTS}
    for ids in request.values():
        ids[:, 0] = 1  # a real token in each row: mask 1, id 1, type 1
    request.update(overrides)
    return {name: tf.constant(value, tf.int32)
            for name, value in request.items()}


@pytest.mark.parametrize("kind, name", [
    (kind, name) for kind in KINDS for name in TEXT_INPUTS[kind]])
@pytest.mark.parametrize("value", [
    [["a", "b"]], [["a"]], "a", "", [[["a"]]]],
    ids=["rank2", "rank2_one", "scalar", "empty_scalar", "rank3"])
def test_text_input_of_another_rank_is_refused_naming_it(kind, name, value,
                                                         loaded):
    shape = np.shape(value)
    with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(
            f"input {name} must be string [batch], got shape] "
            f"[{' '.join(map(str, shape))}]")):
        loaded[kind].signatures["serving_default"](
            **_texts(kind, **{name: value}))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", TOKEN_ID_INPUTS)
@pytest.mark.parametrize("shape", [
    "batch", "scalar", "extra_axis", "shorter", "longer"])
def test_token_ids_of_another_shape_are_refused_naming_the_input(
        kind, name, shape, loaded, serving_modules):
    length = serving_modules[kind].max_seq_length
    value = {"batch": np.ones([length], np.int32),
             "scalar": np.int32(1),
             "extra_axis": np.ones([1, length, 1], np.int32),
             "shorter": np.ones([1, length - 1], np.int32),
             "longer": np.ones([1, length + 1], np.int32)}[shape]
    with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(
            f"input {name} must be int32 [batch, {length}], got shape] "
            f"[{' '.join(map(str, value.shape))}]")):
        loaded[kind].signatures["serve_token_ids"](
            **_token_ids(length, **{name: value}))


@pytest.mark.parametrize("kind, name", [
    (kind, name) for kind in KINDS for name in TEXT_INPUTS[kind]])
@pytest.mark.parametrize("char", ["x", "é", "😀"])
def test_a_text_over_the_character_bound_is_refused_naming_it(
        kind, name, char, loaded):
    """Characters are code points (not bytes); one long word is one window,
    so the text at the bound is answered."""
    serve = loaded[kind].signatures["serving_default"]
    at_bound = char * LIMITS.max_text_chars
    serve(**_texts(kind, 2, **{name: ["fine", at_bound]}))
    with pytest.raises(tf.errors.InvalidArgumentError, match=(
            f"input {name} has a text over the bound of "
            rf"{LIMITS.max_text_chars} characters per text \(max_text_chars\)"
            r" at batch index\] \[1\] \[of\] "
            rf"\[{LIMITS.max_text_chars + 1}\]")):
        serve(**_texts(kind, 2, **{name: ["fine", at_bound + char]}))


@pytest.mark.parametrize("kind", KINDS)
def test_a_request_over_the_batch_character_bound_is_refused(kind, loaded):
    """The bound is on all texts of all inputs together."""
    serve = loaded[kind].signatures["serving_default"]
    names = TEXT_INPUTS[kind]
    batch = LIMITS.max_batch_chars // LIMITS.max_text_chars // len(names)
    assert batch * len(names) * LIMITS.max_text_chars == LIMITS.max_batch_chars
    texts = ["x" * LIMITS.max_text_chars] * batch
    serve(**_texts(kind, batch, **{name: texts for name in names}))
    source = ("input " if len(names) == 1 else "inputs ") + ", ".join(names)
    with pytest.raises(tf.errors.InvalidArgumentError, match=(
            rf"{source}: the request holds\] "
            rf"\[{LIMITS.max_batch_chars + len(names)}\] \[characters, over "
            rf"the bound of {LIMITS.max_batch_chars} characters per "
            r"request \(max_batch_chars\)")):
        serve(**_texts(kind, batch + 1,
                       **{name: texts + ["x"] for name in names}))


@pytest.mark.parametrize("kind", KINDS)
def test_a_request_over_the_window_bound_is_refused(kind, loaded,
                                                    serving_modules):
    """Every example counts as one window at least (checked before
    tokenization); the token-id signature runs one per row."""
    module = serving_modules[kind]
    signatures = loaded[kind].signatures
    signatures["serving_default"](**_texts(kind, LIMITS.max_windows))
    with pytest.raises(tf.errors.InvalidArgumentError, match=(
            rf"{module.texts_source}: the request holds\] "
            rf"\[{LIMITS.max_windows + 1}\] \[examples, over the bound of "
            rf"{LIMITS.max_windows} windows per request \(max_windows")):
        signatures["serving_default"](**_texts(kind, LIMITS.max_windows + 1))
    length = module.max_seq_length
    signatures["serve_token_ids"](**_token_ids(length, LIMITS.max_windows))
    with pytest.raises(tf.errors.InvalidArgumentError, match=(
            r"input input_word_ids rows: the request needs\] "
            rf"\[{LIMITS.max_windows + 1}\] \[encoder windows, over the "
            rf"bound of {LIMITS.max_windows} windows per request "
            r"\(max_windows\)")):
        signatures["serve_token_ids"](
            **_token_ids(length, LIMITS.max_windows + 1))


@pytest.mark.parametrize("kind, name", [("squad", "context"),
                                        ("ner", "text")])
def test_one_long_text_over_the_window_bound_is_refused(kind, name, loaded,
                                                        serving_modules):
    """The windows of one long text count, not the examples: one piece per
    word, a window starting every `doc_stride` / window stride pieces."""
    module = serving_modules[kind]
    stride = module.doc_stride if kind == "squad" else module._window_stride
    words = " ".join(["word"] * (stride * (LIMITS.max_windows + 4)))
    assert len(words) <= LIMITS.max_text_chars
    with pytest.raises(tf.errors.InvalidArgumentError, match=(
            rf"{module.texts_source}: the request needs\] \[\d+\] "
            rf"\[encoder windows, over the bound of {LIMITS.max_windows} "
            r"windows per request \(max_windows\)")):
        loaded[kind].signatures["serving_default"](
            **_texts(kind, **{name: [words]}))


def test_empty_ner_texts_count_as_one_window_each(loaded):
    serve = loaded["ner"].signatures["serving_default"]
    out = serve(text=tf.constant([""] * LIMITS.max_windows))
    assert out["num_words"].numpy().tolist() == [0] * LIMITS.max_windows
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="examples, over the bound of"):
        serve(text=tf.constant([""] * (LIMITS.max_windows + 1)))


@pytest.mark.parametrize("field", ["max_text_chars", "max_batch_chars",
                                   "max_windows"])
@pytest.mark.parametrize("value", [0, -1, 1.5])
def test_request_limits_refuse_values_below_one(field, value):
    with pytest.raises(ValueError, match=f"RequestLimits.{field} must be an "
                                         "integer >= 1"):
        RequestLimits(**{field: value})


def test_smaller_limits_are_the_exports(serving_modules, tmp_path):
    limits = RequestLimits(max_text_chars=5, max_batch_chars=8, max_windows=2)
    path = export_saved_model(serving_modules["regressor"],
                              str(tmp_path / "small"), limits=limits)
    serve = tf.saved_model.load(path).signatures["serving_default"]
    serve(sentence=tf.constant(["abcde", "abc"]))
    for texts, message in [(["abcdef"], "bound of 5 characters per text"),
                           (["abcde", "abcd"], "bound of 8 characters per "
                                               "request"),
                           (["a", "b", "c"], "bound of 2 windows")]:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            serve(sentence=tf.constant(texts))


def test_long_document_windows_count_against_the_window_bound(
        serving_modules, tokenizer):
    """A long-document classifier runs one encoder window every `doc_stride`
    pieces of a text: its windows count against `max_windows`, not the one
    example."""
    module = ClassifierServingModule(
        serving_modules["regressor"].model,
        BertPreprocessor(tokenizer, seq_length=SEQ_LENGTH), None,
        ("sentence",), doc_stride=4)
    serve = module.signatures(limits=RequestLimits(max_windows=3))[
        "serving_default"]
    serve(sentence=tf.constant(["word " * 10]))  # 10 pieces: one window
    with pytest.raises(tf.errors.InvalidArgumentError, match=(
            r"input sentence: the request needs\] \[\d+\] \[encoder "
            r"windows, over the bound of 3 windows per request")):
        serve(sentence=tf.constant(["word " * 40]))
