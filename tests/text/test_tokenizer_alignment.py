"""Every family's tokenizer gives HF's character alignment: the spans of its
pieces (`tokenize_with_offsets`, HF's `offset_mapping`) and of its words
(`split_words_with_offsets`, the tokens HF's `word_ids()` groups), on real
GLUE, CoNLL and SQuAD text. SQuAD's windows and answers and the NER export's
words are built on these."""

import pytest
import tensorflow as tf
from transformers import AutoTokenizer

from tfbert.text import Preprocessor
from zoo_checkpoints import real_texts, sample_texts

# Real text has none of these; they exercise ALBERT's quote pairs, NFKD and
# deleted characters, and byte-level BPE's whitespace runs.
HOSTILE = ["``LaTeX quotes'' and \"plain\"", "  multiple   spaces\tand\n\nnl ",
           "ﬁ ligature Ⅻ ½", "ｆｕｌｌｗｉｄｔｈ", "x\u200by zero width",
           "a\x01b", "Ünïcödé CAFÉ naïve Ångström", "😀 emoji 日本語"]


def char_spans(text, byte_starts, byte_ends):
    """Byte offsets into `text` as (start, end) character offsets."""
    to_char = {len(text[:i].encode("utf-8")): i for i in range(len(text) + 1)}
    return [(to_char[s], to_char[e]) for s, e in zip(byte_starts, byte_ends)]


def hf_word_spans(text, offsets, word_ids):
    """(start, end) of each HF word, over its tokens; words that are only
    whitespace (byte-level BPE's "Ġ", "Ċ" tokens) left out."""
    spans = {}
    for (start, end), word in zip(offsets, word_ids):
        first, last = spans.get(word, (start, end))
        spans[word] = (min(first, start), max(last, end))
    return [span for _, span in sorted(spans.items())
            if text[span[0]:span[1]].strip()]


@pytest.fixture(scope="module")
def texts(shared_data_dir):
    sampled = sample_texts(real_texts(shared_data_dir), per_source=15)
    return [t for values in sampled.values() for t in values]


@pytest.mark.parametrize("family", ["roberta", "albert", "bert"])
def test_piece_and_word_spans_match_hf(family, zoo_checkpoints, texts):
    checkpoint = zoo_checkpoints[family]
    if family != "bert":  # BERT's words keep what normalisation deletes.
        texts = texts + HOSTILE
    tokenizer = Preprocessor.from_pretrained(checkpoint).tokenizer
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    _, word_starts, word_ends = tokenizer.split_words_with_offsets(
        tf.constant(texts))
    encoding = AutoTokenizer.from_pretrained(checkpoint)(
        texts, add_special_tokens=False, return_offsets_mapping=True)
    for index, text in enumerate(texts):
        offsets = [tuple(span) for span in encoding["offset_mapping"][index]]
        assert ids[index].numpy().tolist() == encoding["input_ids"][index]
        assert char_spans(text, starts[index].numpy(),
                          ends[index].numpy()) == offsets, text
        assert char_spans(text, word_starts[index].numpy(),
                          word_ends[index].numpy()) == hf_word_spans(
            text, offsets, encoding.word_ids(index)), text
