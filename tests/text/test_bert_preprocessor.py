"""Tests for tfbert.text.BertPreprocessor: packing and truncation vs HF."""

import csv
import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from tokenizers import Tokenizer

from tfbert.text import BertPreprocessor, BertTokenizer

KEYS = ("input_word_ids", "input_mask", "input_type_ids")


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return BertTokenizer.from_pretrained(minilm_dir)


@pytest.fixture(scope="module")
def hf_tokenizer(minilm_dir):
    return Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))


@pytest.fixture(scope="module")
def pairs(shared_data_dir):
    """Real sentence pairs: all MRPC dev pairs and 300 STS-B dev pairs."""
    def read(path, columns, encoding="utf-8"):
        with open(path, encoding=encoding, newline="") as f:
            rows = list(csv.reader(f, delimiter="\t",
                                   quoting=csv.QUOTE_NONE))[1:]
        return [(row[columns[0]], row[columns[1]]) for row in rows]

    glue = shared_data_dir / "glue"
    return (read(glue / "MRPC/dev.tsv", (3, 4), encoding="utf-8-sig")
            + read(glue / "STS-B/dev.tsv", (7, 8))[:300])


def _hf_pack(hf_tokenizer, inputs, seq_length):
    hf_tokenizer.enable_truncation(seq_length, strategy="longest_first")
    hf_tokenizer.enable_padding(length=seq_length, pad_id=0)
    encodings = hf_tokenizer.encode_batch(inputs)
    return {
        "input_word_ids": np.array([e.ids for e in encodings]),
        "input_mask": np.array([e.attention_mask for e in encodings]),
        "input_type_ids": np.array([e.type_ids for e in encodings]),
    }


def _assert_packed_equal(got, expected, label=""):
    for key in KEYS:
        np.testing.assert_array_equal(got[key].numpy(), expected[key],
                                      err_msg=f"{label} {key}")


@pytest.mark.parametrize("seq_length", [16, 17, 32, 33, 128])
def test_pair_packing_matches_hf(tokenizer, hf_tokenizer, pairs, seq_length):
    pre = BertPreprocessor(tokenizer, seq_length=seq_length)
    for order in ("ab", "ba"):
        both = pairs if order == "ab" else [(b, a) for a, b in pairs]
        first, second = (tf.constant([p[i] for p in both]) for i in (0, 1))
        got = pre((first, second))
        for key in KEYS:
            assert got[key].dtype == tf.int32
            assert got[key].shape == (len(both), seq_length)
        _assert_packed_equal(got, _hf_pack(hf_tokenizer, both, seq_length),
                             f"seq_length={seq_length} order={order}")
    print(f"pairs: {2 * len(pairs)} packed pairs at seq_length {seq_length} "
          "identical to HF")


def test_longest_first_grid_matches_hf(tokenizer, hf_tokenizer):
    """Every length combination, odd and even budgets, vs HF's LongestFirst."""
    grid = [(a, b) for a in range(11) for b in range(11)]
    firsts = [" ".join(["a"] * a) for a, _ in grid]
    seconds = [" ".join(["b"] * b) for _, b in grid]
    for seq_length in range(3, 16):
        pre = BertPreprocessor(tokenizer, seq_length=seq_length)
        got = pre((tf.constant(firsts), tf.constant(seconds)))
        expected = _hf_pack(hf_tokenizer, list(zip(firsts, seconds)),
                            seq_length)
        _assert_packed_equal(got, expected, f"seq_length={seq_length}")


def test_single_segment_matches_hf(tokenizer, hf_tokenizer, pairs):
    texts = [a for a, _ in pairs]
    for seq_length in (2, 16, 128):
        pre = BertPreprocessor(tokenizer, seq_length=seq_length)
        _assert_packed_equal(pre(tf.constant(texts)),
                             _hf_pack(hf_tokenizer, texts, seq_length))
        _assert_packed_equal(pre([tf.constant(texts)]),
                             _hf_pack(hf_tokenizer, texts, seq_length))


def test_waterfall_truncation(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=10, truncation="waterfall")
    a = tf.ragged.constant([[11] * 9, [11] * 3, [11] * 2], dtype=tf.int32)
    b = tf.ragged.constant([[22] * 4, [22] * 9, [22] * 1], dtype=tf.int32)
    got = pre.pack([a, b])["input_word_ids"].numpy().tolist()
    assert got == [
        [101] + [11] * 7 + [102, 102],
        [101] + [11] * 3 + [102] + [22] * 4 + [102],
        [101, 11, 11, 102, 22, 102, 0, 0, 0, 0],
    ]


def test_longest_first_pack_differs_from_original_bert_on_odd_budget(
        tokenizer):
    # Budget 7 for two 5-token segments: HF (and we) keep 3 + 4; the original
    # BERT "pop from the longer, ties from B" rule keeps 4 + 3.
    pre = BertPreprocessor(tokenizer, seq_length=10)
    a = tf.ragged.constant([[11] * 5], dtype=tf.int32)
    b = tf.ragged.constant([[22] * 5], dtype=tf.int32)
    got = pre.pack([a, b])
    assert got["input_word_ids"].numpy().tolist() == [
        [101, 11, 11, 11, 102, 22, 22, 22, 22, 102]]
    assert got["input_type_ids"].numpy().tolist() == [[0] * 5 + [1] * 5]


def test_no_padding_to_seq_length(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=8, pad_to_seq_length=False)
    got = pre(tf.constant(["hello", "hello world"]))
    assert got["input_word_ids"].numpy().tolist() == [
        [101, 7592, 102, 0], [101, 7592, 2088, 102]]
    assert got["input_mask"].numpy().tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    long = pre(tf.constant(["a b c d e f g h i j"]))
    assert long["input_word_ids"].shape == (1, 8)


def test_python_and_numpy_inputs(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=6)
    expected = pre(tf.constant(["Hello world"]))["input_word_ids"].numpy()
    for inputs in (["Hello world"], np.array(["Hello world"]),
                   (["Hello world"],)):
        np.testing.assert_array_equal(
            pre(inputs)["input_word_ids"].numpy(), expected)


def test_dataset_map_on_batches(tokenizer, pairs):
    pre = BertPreprocessor(tokenizer, seq_length=32)
    first = [a for a, _ in pairs[:100]]
    second = [b for _, b in pairs[:100]]
    expected = pre((tf.constant(first), tf.constant(second)))
    dataset = tf.data.Dataset.from_tensor_slices((first, second)).batch(
        32).map(lambda a, b: pre((a, b)))
    batches = list(dataset)
    for key in KEYS:
        got = np.concatenate([batch[key].numpy() for batch in batches])
        np.testing.assert_array_equal(got, expected[key].numpy())
    assert batches[0]["input_word_ids"].shape == (32, 32)


@pytest.mark.slow
def test_saved_model_in_plain_tensorflow_process(tokenizer, pairs, tmp_path,
                                                  run_fresh_python):
    pre = BertPreprocessor(tokenizer, seq_length=32)
    module = tf.Module()
    module.preprocessor = pre
    module.single = tf.function(
        lambda x: pre(x), input_signature=[tf.TensorSpec([None], tf.string)])
    module.pair = tf.function(
        lambda a, b: pre((a, b)),
        input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    path = str(tmp_path / "preprocessor")
    tf.saved_model.save(module, path)

    first = [a for a, _ in pairs[:50]] + ["", "Ünïcode\x00 中文 ΣΑΣ"]
    second = [b for _, b in pairs[:50]] + ["x", ""]
    code = (
        "import json, sys\n"
        "import tensorflow as tf, tensorflow_text\n"
        f"m = tf.saved_model.load({path!r})\n"
        "a, b = json.loads(sys.stdin.read())\n"
        "single = m.single(tf.constant(a))\n"
        "pair = m.pair(tf.constant(a), tf.constant(b))\n"
        "assert not any(k.startswith('tfbert') for k in sys.modules)\n"
        "print(json.dumps([{k: v.numpy().tolist() for k, v in d.items()}"
        " for d in (single, pair)]))\n")
    single, pair = run_fresh_python(code, stdin=json.dumps([first, second]),
                                    timeout=120)
    for loaded, inputs in ((single, tf.constant(first)),
                           (pair, (tf.constant(first), tf.constant(second)))):
        expected = pre(inputs)
        for key in KEYS:
            assert loaded[key] == expected[key].numpy().tolist(), key


def test_config_round_trip(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=24, truncation="waterfall",
                           pad_to_seq_length=False, name="pre")
    config = pre.get_config()
    assert config["vocabulary"] == tokenizer.vocabulary
    assert (config["lowercase"], config["strip_accents"], config["seq_length"],
            config["truncation"], config["pad_to_seq_length"]) == (
        True, None, 24, "waterfall", False)
    json.dumps(config)
    for clone in (BertPreprocessor.from_config(config),
                  keras.layers.deserialize(keras.layers.serialize(pre))):
        assert isinstance(clone, BertPreprocessor)
        assert clone.get_config() == config
        inputs = (tf.constant(["Héllo there", "a"]), tf.constant(["b", "c d"]))
        for key in KEYS:
            np.testing.assert_array_equal(clone(inputs)[key].numpy(),
                                          pre(inputs)[key].numpy())


def test_from_pretrained(minilm_dir):
    pre = BertPreprocessor.from_pretrained("minilm-l6-h384-uncased",
                                           seq_length=8, strip_accents=False)
    assert pre.seq_length == 8 and not pre.tokenizer.strip_accents
    by_dir = BertPreprocessor.from_pretrained(minilm_dir, seq_length=8)
    assert by_dir.tokenizer.vocabulary == pre.tokenizer.vocabulary
    assert by_dir(tf.constant(["Hello"]))["input_word_ids"].numpy().tolist() \
        == [[101, 7592, 102, 0, 0, 0, 0, 0]]


def test_errors(tokenizer):
    text = tf.constant(["a"])
    with pytest.raises(ValueError,
                       match="BertPreprocessor takes 1 or 2 segments, got 3"):
        BertPreprocessor(tokenizer)((text, text, text))
    with pytest.raises(ValueError, match="seq_length 2 is too short for 2"):
        BertPreprocessor(tokenizer, seq_length=2)((text, text))
    with pytest.raises(ValueError, match="seq_length must be >= 2"):
        BertPreprocessor(tokenizer, seq_length=1)
    with pytest.raises(ValueError, match="truncation must be one of"):
        BertPreprocessor(tokenizer, truncation="only_first")
    with pytest.raises(TypeError, match="BertTokenizer"):
        BertPreprocessor("vocab.txt")


def test_empty_batch_and_empty_texts(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=6)
    empty = pre((tf.constant([], tf.string), tf.constant([], tf.string)))
    assert empty["input_word_ids"].shape == (0, 6)
    got = pre((tf.constant(["", " "]), tf.constant(["", "\u200b"])))
    assert got["input_word_ids"].numpy().tolist() == [
        [101, 102, 102, 0, 0, 0]] * 2
    assert got["input_type_ids"].numpy().tolist() == [[0, 0, 1, 0, 0, 0]] * 2


def test_functional_keras_model(tokenizer):
    pre = BertPreprocessor(tokenizer, seq_length=8)
    first = keras.Input(shape=(), dtype="string")
    second = keras.Input(shape=(), dtype="string")
    model = keras.Model([first, second], pre((first, second)))
    inputs = (tf.constant(["hi there"]), tf.constant(["x"]))
    got = model(inputs)
    for key in KEYS:
        np.testing.assert_array_equal(got[key].numpy(),
                                      pre(inputs)[key].numpy())
