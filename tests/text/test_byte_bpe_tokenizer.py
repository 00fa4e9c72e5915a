"""Tests for tfbert.text.ByteBpeTokenizer: id parity with HF's
RobertaTokenizerFast (the `tokenizers` Rust BPE) on real text, a tokenizer
trained on real Wikipedia text (tests/zoo_checkpoints.py)."""

import itertools
import json

import numpy as np
import pytest
import tensorflow as tf
from transformers import AutoTokenizer

from tfbert.export.serving_ops import check_serving_ops
from tfbert.text import ByteBpeTokenizer
from zoo_checkpoints import pieces_per_word, real_texts, sample_texts

# Every Unicode White_Space character, and text around them that exercises
# each branch of the GPT-2 pattern (contractions, " ?" prefixes, whitespace
# runs before text and at the end).
WHITESPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
              "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f"
              "\u3000")
HOSTILE = [
    "", " ", "   ", "\n", "a", " a", "a ", "a  b", "a \n b", "a\n\nb  ",
    "it's I'm we'll they've you're he'd don't 'sx ''s  's 'S", "x\x00y\x00",
    "Ünïcödé café naïve", "日本語のテキスト", "😀👍🏽 emoji\u200dzwj",
    "1234567 3.14159 1,000,000 ١٢٣", "e\u0301 combining", "tab\tsep\tvalues",
    "<s> literal </s> <mask> <pad>", "http://example.com/a?b=c&d=e#frag",
    "a" * 300, "ab" * 150 + " " + "xyz" * 50, "ﬁ ligature Ⅻ ½ ｆｕｌｌ",
] + [f"a{w}b {w}c{w}{w}d {w}" for w in WHITESPACE]


@pytest.fixture(scope="module")
def roberta_dir(zoo_checkpoints):
    return zoo_checkpoints["roberta"]


@pytest.fixture(scope="module")
def tokenizer(roberta_dir):
    return ByteBpeTokenizer.from_pretrained(roberta_dir)


@pytest.fixture(scope="module")
def hf_tokenizer(roberta_dir):
    return AutoTokenizer.from_pretrained(roberta_dir)


def assert_same_ids(tokenizer, hf_tokenizer, texts, batch_size=2048):
    tokenize = tf.function(tokenizer.tokenize, reduce_retracing=True)
    ours = [tokenize(tf.constant(texts[start:start + batch_size]))
            for start in range(0, len(texts), batch_size)]
    # The Rust tokenizer behind HF's fast tokenizer, without the Python
    # wrapper's per-text overhead (the same ids as `hf_tokenizer(texts)`).
    theirs = [encoding.ids for encoding in
              hf_tokenizer.backend_tokenizer.encode_batch(
                  texts, add_special_tokens=False)]
    # Compared as flat arrays (1.1M rows in the code point sweep); lists
    # only to name the texts that differ.
    if (np.array_equal(
            np.concatenate([ids.row_lengths().numpy() for ids in ours]),
            [len(ids) for ids in theirs])
            and np.array_equal(
                np.concatenate([ids.flat_values.numpy() for ids in ours]),
                np.fromiter(itertools.chain.from_iterable(theirs), np.int64))):
        return
    ours = [row for ids in ours for row in ids.to_list()]
    wrong = [(t, o, h) for t, o, h in zip(texts, ours, theirs) if o != h]
    assert not wrong, (f"{len(wrong)} of {len(texts)} texts differ, e.g. "
                       f"{wrong[:3]}")


def test_real_text_sample_matches_hf(tokenizer, hf_tokenizer,
                                     shared_data_dir):
    texts = sample_texts(real_texts(shared_data_dir), per_source=400)
    assert_same_ids(tokenizer, hf_tokenizer,
                    [t for values in texts.values() for t in values])


@pytest.mark.slow
def test_every_real_string_matches_hf(tokenizer, hf_tokenizer,
                                      shared_data_dir):
    for values in real_texts(shared_data_dir).values():
        assert_same_ids(tokenizer, hf_tokenizer, values)


@pytest.mark.parametrize("add_prefix_space", [False, True])
def test_hostile_text_matches_hf(roberta_dir, add_prefix_space):
    ours = ByteBpeTokenizer.from_pretrained(
        roberta_dir, add_prefix_space=add_prefix_space)
    theirs = AutoTokenizer.from_pretrained(
        roberta_dir, add_prefix_space=add_prefix_space)
    # HF maps literal special-token text to the special tokens; we do not
    # (documented), so compare that string only through its pre-tokens.
    texts = [t for t in HOSTILE if "<s>" not in t]
    assert_same_ids(ours, theirs, texts)


def test_literal_special_tokens_are_ordinary_text(tokenizer, hf_tokenizer):
    # HF's own pre-tokenizer and BPE model, without its special-token
    # matching, give the ids we want.
    backend = hf_tokenizer.backend_tokenizer
    text = "<s>hi</s> <mask> <pad>"
    expected = [token.id
                for word, _ in backend.pre_tokenizer.pre_tokenize_str(text)
                for token in backend.model.tokenize(word)]
    ids = tokenizer.tokenize([text]).to_list()[0]
    assert ids == expected
    assert not {tokenizer.bos_id, tokenizer.eos_id, tokenizer.mask_id,
                tokenizer.pad_id} & set(ids)


def sweep_code_points():
    """Every assigned-or-assignable code point of planes 0-3 and 14 (all of
    Unicode's characters and tags, surrogates excepted), and every 61st of
    planes 4-13 (unassigned) and 15-16 (private use). Within those sampled
    planes all code points share one general category (but each plane's two
    last noncharacters), so the pre-tokenizer pattern treats them alike, and
    every pair of adjacent UTF-8 bytes that any code point has, which is
    what the byte-level merges read, still occurs (checked below). 339k code
    points instead of 1.1M: the full sweep took ~120 s of the suite."""
    full = [*range(1, 0xD800), *range(0xE000, 0x40000),
            *range(0xE0000, 0xF0000)]
    return full + [*range(0x40000, 0xE0000, 61), *range(0xF0000, 0x110000, 61)]


def test_sweep_covers_every_utf8_byte_pair():
    def byte_pairs(code_points):
        return {encoded[i:i + 2] for encoded in map(str.encode,
                                                   map(chr, code_points))
                for i in range(len(encoded) - 1)}

    assert byte_pairs(sweep_code_points()) == byte_pairs(
        c for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000)


@pytest.mark.slow
def test_every_code_point_pre_tokenizes_like_hf(tokenizer, hf_tokenizer):
    code_points = sweep_code_points()
    texts = [f"a{chr(c) * 3}b {chr(c)}x{chr(c)}1 {chr(c)}"
             for c in code_points]
    assert_same_ids(tokenizer, hf_tokenizer, texts, batch_size=20000)


def test_works_in_tf_data(tokenizer, hf_tokenizer):
    texts = ["Hello world!", "  two  spaces", "it's"]
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(
        tokenizer.tokenize)
    ours = [ids for batch in dataset for ids in batch.to_list()]
    assert ours == hf_tokenizer(texts, add_special_tokens=False)["input_ids"]


def test_saved_model_uses_only_serving_ops(tokenizer, tmp_path):
    module = tf.Module()
    module.tokenizer = tokenizer
    module.tokenize = tf.function(
        lambda texts: tokenizer.tokenize(texts).to_tensor(-1),
        input_signature=[tf.TensorSpec([None], tf.string)])
    export_dir = str(tmp_path / "bpe")
    tf.saved_model.save(module, export_dir)
    check_serving_ops(export_dir)
    texts = tf.constant(["Serving works, doesn't it?", ""])
    restored = tf.saved_model.load(export_dir)
    assert (restored.tokenize(texts).numpy().tolist()
            == tokenizer.tokenize(texts).to_tensor(-1).numpy().tolist())


def test_bad_merges_line_is_named(roberta_dir, tmp_path):
    (tmp_path / "vocab.json").write_text(
        (roberta_dir / "vocab.json").read_text(encoding="utf-8"),
        encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\nĠ t\nab\n",
                                         encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges.txt, line 3"):
        ByteBpeTokenizer.from_pretrained(tmp_path)


def test_merge_outside_vocabulary_is_rejected(roberta_dir):
    with open(roberta_dir / "vocab.json", encoding="utf-8") as f:
        vocabulary = json.load(f)
    with pytest.raises(ValueError, match="merge 0 .* not in the vocabulary"):
        ByteBpeTokenizer(vocabulary, ["zzzzq qqqqz"])


def test_words_match_hf_split_into_words(roberta_dir, shared_data_dir):
    from tfbert.data.conll import read_conll

    sentences = [s.words for s in read_conll(
        shared_data_dir / "conll2003" / "valid.txt")][::10]
    hf_tokenizer = AutoTokenizer.from_pretrained(roberta_dir,
                                                 add_prefix_space=True)
    encoding = hf_tokenizer(sentences, is_split_into_words=True,
                            add_special_tokens=False)
    ours = ByteBpeTokenizer.from_pretrained(roberta_dir).tokenize_words(
        sentences).to_list()
    for index, words in enumerate(sentences):
        assert ours[index] == pieces_per_word(encoding, index, len(words)), (
            words)


def char_spans(text, byte_starts, byte_ends):
    """Byte offsets into `text` as character offsets (None if inside one)."""
    to_char = {len(text[:i].encode("utf-8")): i for i in range(len(text) + 1)}
    return [(to_char.get(s), to_char.get(e))
            for s, e in zip(byte_starts, byte_ends)]


@pytest.mark.parametrize("add_prefix_space", [False, True])
def test_offsets_match_hf(roberta_dir, shared_data_dir, add_prefix_space):
    texts = sample_texts(real_texts(shared_data_dir), per_source=40)
    texts = [t for values in texts.values() for t in values] + [
        t for t in HOSTILE if "<s>" not in t]
    ours = ByteBpeTokenizer.from_pretrained(
        roberta_dir, add_prefix_space=add_prefix_space)
    ids, starts, ends = ours.tokenize_with_offsets(tf.constant(texts))
    encoding = AutoTokenizer.from_pretrained(
        roberta_dir, add_prefix_space=add_prefix_space)(
            texts, add_special_tokens=False, return_offsets_mapping=True)
    for index, text in enumerate(texts):
        assert ids[index].numpy().tolist() == encoding["input_ids"][index]
        spans = char_spans(text, starts[index].numpy().tolist(),
                           ends[index].numpy().tolist())
        assert spans == [tuple(span) for span in
                         encoding["offset_mapping"][index]], text


def test_tokenizer_json_alone_is_enough(roberta_dir, hf_tokenizer, tmp_path):
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((roberta_dir / name).read_bytes())
    texts = ["Loaded from tokenizer.json only, isn't it?"]
    ours = ByteBpeTokenizer.from_pretrained(tmp_path).tokenize(texts)
    assert ours.to_list() == hf_tokenizer(
        texts, add_special_tokens=False)["input_ids"]
