"""Word labels -> WordPiece windows -> word labels is the identity."""

import numpy as np
import pytest

from tfbert.data.conll import labels_from_sentences, read_conll
from tfbert.data.ner_alignment import (IGNORE_LABEL, convert_to_features,
                                       plan_windows, stitch_predictions)
from tfbert.text import BertTokenizer


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return BertTokenizer.from_pretrained(minilm_dir)


@pytest.mark.slow
def test_round_trip_on_all_of_conll2003(shared_data_dir, tokenizer):
    sentences = (read_conll(shared_data_dir / "conll2003" / "train.txt")
                 + read_conll(shared_data_dir / "conll2003" / "valid.txt"))
    labels = labels_from_sentences(sentences)
    ids = {label: i for i, label in enumerate(labels)}
    words = [s.words for s in sentences]
    label_ids = [[ids[t] for t in s.tags] for s in sentences]
    max_seq_length = 32
    features = convert_to_features(words, label_ids, tokenizer,
                                   max_seq_length)
    assert max(len(w) for w in features.input_word_ids) <= max_seq_length
    windows_per_sentence = np.bincount(features.sentence_index)
    assert (windows_per_sentence >= 1).all()
    assert (windows_per_sentence > 1).sum() > 1000  # windows really happen
    # Every label sits on a word's first piece, every other position ignored.
    for window_labels, word_index in zip(features.labels, features.word_index):
        assert ((window_labels != IGNORE_LABEL) == (word_index >= 0)).all()
    assert stitch_predictions(features, features.labels) == label_ids

    # The first piece of each word really is the word's first WordPiece.
    sample = words[:200]
    pieces = tokenizer.tokenize_words([s for s in sample]).to_list()
    small = convert_to_features(sample, None, tokenizer, 512)
    for window, sentence in enumerate(small.sentence_index):
        first = small.input_word_ids[window][small.word_index[window] >= 0]
        expected = [p[0] if p else tokenizer.unk_id for p in pieces[sentence]]
        assert list(first) == expected


def test_windows_cover_every_word_and_overlap():
    counts = [1, 3, 2, 1, 1, 4, 1, 1, 2, 1, 9, 1]
    windows = plan_windows(counts, max_pieces=6, window_stride=3)
    covered = sorted({w for first, end in windows for w in range(first, end)})
    assert covered == list(range(len(counts)))
    for (a, b), (c, d) in zip(windows, windows[1:]):
        assert a < c <= b
    for first, end in windows:
        assert sum(counts[first:end]) <= 6 or end == first + 1


def test_overlong_word_and_empty_word(tokenizer):
    long_word = "x" * 60 + "".join(chr(0x4E00 + i) for i in range(40))
    features = convert_to_features([["a", long_word, "\u200b", "b"]],
                                   [[1, 2, 3, 4]], tokenizer, 16)
    assert stitch_predictions(features, features.labels) == [[1, 2, 3, 4]]
    assert max(len(ids) for ids in features.input_word_ids) <= 16


@pytest.mark.parametrize("family", ["roberta", "albert", "bert"])
def test_windows_match_hf_run_ner(family, zoo_checkpoints, shared_data_dir):
    """Sentences that fit one window: the packed ids and the labels equal
    HF run_ner's `tokenize_and_align_labels` (words pre-split, RoBERTa with
    `add_prefix_space=True`, the label on each word's first token)."""
    from transformers import AutoTokenizer

    from tfbert.text import Preprocessor

    sentences = read_conll(shared_data_dir / "conll2003" / "valid.txt")[::10]
    labels = labels_from_sentences(sentences)
    label_ids = [[labels.index(t) for t in s.tags] for s in sentences]
    hf = AutoTokenizer.from_pretrained(
        zoo_checkpoints[family],
        **({"add_prefix_space": True} if family == "roberta" else {}))
    encoding = hf([s.words for s in sentences], is_split_into_words=True)
    preprocessor = Preprocessor.from_pretrained(zoo_checkpoints[family])
    features = convert_to_features(
        [s.words for s in sentences], label_ids, preprocessor.tokenizer, 512,
        layout=preprocessor.layout)
    assert len(features) == len(sentences)
    for index, words in enumerate(label_ids):
        word_ids = encoding.word_ids(index)
        expected = [IGNORE_LABEL if word is None or word == previous
                    else words[word]
                    for previous, word in zip([None] + word_ids, word_ids)]
        assert features.input_word_ids[index].tolist() == (
            encoding["input_ids"][index])
        assert features.labels[index].tolist() == expected
