"""Tests for tfbert.Preprocessor: every family's packing equals HF's
`tokenizer(text, text_pair, truncation=True, max_length=L,
padding="max_length")` on real GLUE pairs, with each family's HF tokenizer
saved in a tiny checkpoint (tests/zoo_checkpoints.py)."""

import json

import numpy as np
import pytest
import tensorflow as tf
from transformers import AutoTokenizer

import tfbert
from tfbert.export.serving_ops import unservable_ops
from tfbert.text import BertPreprocessor, Preprocessor
from zoo_checkpoints import glue_pairs

FAMILIES = ("bert", "distilbert", "electra", "roberta", "albert")
KEYS = (("input_word_ids", "input_ids"), ("input_mask", "attention_mask"),
        ("input_type_ids", "token_type_ids"))


@pytest.fixture(scope="module")
def pairs(shared_data_dir):
    """Every 20th MRPC train pair and every 15th RTE train pair (RTE's
    premises are long, so truncation cuts both segments)."""
    return (glue_pairs(shared_data_dir, "MRPC")[::20]
            + glue_pairs(shared_data_dir, "RTE")[::15])


def assert_same_as_hf(outputs, expected):
    for ours, theirs in KEYS:
        np.testing.assert_array_equal(
            outputs[ours].numpy(), np.array(expected[theirs], np.int32),
            err_msg=ours)
        assert outputs[ours].dtype == tf.int32


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("seq_length", [24, 128])
def test_pairs_match_hf(zoo_checkpoints, pairs, family, seq_length):
    directory = zoo_checkpoints[family]
    preprocessor = tfbert.Preprocessor.from_pretrained(directory,
                                                       seq_length=seq_length)
    hf_tokenizer = AutoTokenizer.from_pretrained(directory)
    first, second = zip(*pairs)
    outputs = preprocessor((tf.constant(first), tf.constant(second)))
    expected = hf_tokenizer(list(first), list(second), truncation=True,
                            max_length=seq_length, padding="max_length",
                            return_token_type_ids=True)
    assert_same_as_hf(outputs, expected)


@pytest.mark.parametrize("family", FAMILIES)
def test_single_segments_match_hf(zoo_checkpoints, pairs, family):
    directory = zoo_checkpoints[family]
    preprocessor = Preprocessor.from_pretrained(directory, seq_length=32)
    texts = [first for first, _ in pairs]
    outputs = preprocessor(tf.constant(texts))
    expected = AutoTokenizer.from_pretrained(directory)(
        texts, truncation=True, max_length=32, padding="max_length",
        return_token_type_ids=True)
    assert_same_as_hf(outputs, expected)


def test_python_lists_are_batches_of_texts(zoo_checkpoints):
    preprocessor = Preprocessor.from_pretrained(zoo_checkpoints["albert"],
                                                seq_length=16)
    single = preprocessor(["one text", "another text"])
    assert single["input_word_ids"].shape == (2, 16)
    pair = preprocessor((["first"], ["second"]))
    expected = preprocessor((tf.constant(["first"]), tf.constant(["second"])))
    np.testing.assert_array_equal(pair["input_type_ids"].numpy(),
                                  expected["input_type_ids"].numpy())
    assert pair["input_type_ids"].numpy().max() == 1


def test_family_layouts(zoo_checkpoints):
    """The special tokens by hand, for the two layouts that differ."""
    roberta = Preprocessor.from_pretrained(zoo_checkpoints["roberta"],
                                           seq_length=10)
    bpe = roberta.tokenizer
    a, b = bpe.tokenize(["hi"]).to_list()[0], bpe.tokenize(["yo"]).to_list()[0]
    outputs = roberta((tf.constant(["hi"]), tf.constant(["yo"])))
    packed = [bpe.bos_id, *a, bpe.eos_id, bpe.eos_id, *b, bpe.eos_id]
    assert outputs["input_word_ids"].numpy()[0].tolist() == (
        packed + [bpe.pad_id] * (10 - len(packed)))
    assert outputs["input_type_ids"].numpy().max() == 0

    albert = Preprocessor.from_pretrained(zoo_checkpoints["albert"],
                                          seq_length=10)
    spm = albert.tokenizer
    a, b = spm.tokenize(["hi"]).to_list()[0], spm.tokenize(["yo"]).to_list()[0]
    outputs = albert((tf.constant(["hi"]), tf.constant(["yo"])))
    packed = [spm.cls_id, *a, spm.sep_id, *b, spm.sep_id]
    assert outputs["input_word_ids"].numpy()[0].tolist() == (
        packed + [spm.pad_id] * (10 - len(packed)))
    assert outputs["input_type_ids"].numpy()[0].tolist() == (
        [0] * (len(a) + 2) + [1] * (len(b) + 1) + [0] * (10 - len(packed)))


@pytest.mark.parametrize("family,expected", [
    ("bert", BertPreprocessor), ("distilbert", BertPreprocessor),
    ("electra", BertPreprocessor), ("roberta", Preprocessor),
    ("albert", Preprocessor)])
def test_from_pretrained_picks_the_family(zoo_checkpoints, family, expected):
    preprocessor = Preprocessor.from_pretrained(zoo_checkpoints[family])
    assert type(preprocessor) is expected


def test_tokenizer_arguments_reach_the_tokenizer(zoo_checkpoints):
    preprocessor = Preprocessor.from_pretrained(
        zoo_checkpoints["roberta"], seq_length=16, add_prefix_space=True,
        truncation="waterfall")
    assert preprocessor.tokenizer.add_prefix_space
    assert preprocessor.truncation == "waterfall"


def test_unknown_model_type_names_file_and_field(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ValueError,
                       match=r"config.json: model_type 'gpt2' is not a known"):
        Preprocessor.from_pretrained(tmp_path)


def test_too_short_seq_length_is_rejected(zoo_checkpoints):
    preprocessor = Preprocessor.from_pretrained(zoo_checkpoints["roberta"],
                                                seq_length=3)
    with pytest.raises(ValueError, match="too short for 2 segments"):
        preprocessor((tf.constant(["a"]), tf.constant(["b"])))


def test_three_segments_error_names_the_preprocessor_called(zoo_checkpoints):
    preprocessor = Preprocessor.from_pretrained(zoo_checkpoints["roberta"])
    text = tf.constant(["a"])
    message = r"(?<!Bert)Preprocessor takes 1 or 2 segments, got 3"
    with pytest.raises(ValueError, match=message):
        preprocessor((text, text, text))


def test_config_round_trip(zoo_checkpoints, pairs):
    for family in ("roberta", "albert"):
        preprocessor = Preprocessor.from_pretrained(zoo_checkpoints[family],
                                                    seq_length=24)
        copy = Preprocessor.from_config(preprocessor.get_config())
        texts = tf.constant([first for first, _ in pairs[:8]])
        for key, _ in KEYS:
            np.testing.assert_array_equal(copy(texts)[key].numpy(),
                                          preprocessor(texts)[key].numpy())


# Loads a SavedModel the way TF Serving links ops (tensorflow and
# tensorflow_text only) and prints its outputs for two texts as JSON.
_SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
serve = tf.saved_model.load(sys.argv[1]).serve
outputs = serve(tf.constant([sys.argv[2]]), tf.constant([sys.argv[3]]))
print(json.dumps({k: v.numpy().tolist() for k, v in outputs.items()}))
"""


@pytest.mark.parametrize("family", ["roberta", "albert"])
@pytest.mark.slow
def test_saved_model_serves_raw_text(zoo_checkpoints, tmp_path, family,
                                     run_fresh_python):
    preprocessor = Preprocessor.from_pretrained(zoo_checkpoints[family],
                                                seq_length=16)
    module = tf.Module()
    module.preprocessor = preprocessor
    module.serve = tf.function(
        lambda a, b: preprocessor((a, b)),
        input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    export_dir = str(tmp_path / family)
    tf.saved_model.save(module, export_dir)
    assert unservable_ops(export_dir) == []
    a, b = "Is it ``served''?", "Yes, it's served."
    served = run_fresh_python(_SERVE, export_dir, a, b)
    expected = preprocessor((tf.constant([a]), tf.constant([b])))
    for key, _ in KEYS:
        assert served[key] == expected[key].numpy().tolist()
