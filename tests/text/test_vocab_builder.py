"""WordPiece vocabulary learning."""

import collections

import pytest
import tokenizers
from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner)

from tfbert.data.wikipedia import article_sentences, read_wikiextractor
from tfbert.text import BertTokenizer
from tfbert.text.vocab import load_vocabulary
from tfbert.text.vocab_builder import (
    build_vocabulary, build_vocabulary_file, count_words, learn_pieces)


@pytest.fixture(scope="module")
def sentences(shared_data_dir):
    path = shared_data_dir / "wikipedia/enwiki-wikiextractor/AA/wiki_02"
    lines = []
    for _, paragraphs in read_wikiextractor(path):
        lines.extend(article_sentences(paragraphs))
        if len(lines) > 600:
            break
    return lines


def test_count_words_progress(capsys):
    count_words(["a b"] * 5, chunk_size=2)
    assert "5/Unknown" in capsys.readouterr().out
    count_words(["a b"] * 5, chunk_size=2, verbose=0)
    assert capsys.readouterr().out == ""


def test_count_words_small_cases():
    assert count_words(["Héllo, Wörld!  A\u200bB", "héllo"], verbose=0) == {
        "hello": 2, ",": 1, "world": 1, "!": 1, "ab": 1}
    assert count_words(["Héllo"], lowercase=False, verbose=0) == {"Héllo": 1}


@pytest.mark.parametrize("lowercase", [True, False])
def test_count_words_matches_hf_bert_pre_tokenizer(sentences, lowercase):
    normalizer = tokenizers.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None,
        lowercase=lowercase)
    pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    expected = collections.Counter(
        word for line in sentences
        for word, _ in pre_tokenizer.pre_tokenize_str(
            normalizer.normalize_str(line)))
    assert sum(expected.values()) > 10000
    assert count_words(sentences, lowercase, chunk_size=97,
                       verbose=0) == expected


@pytest.mark.slow
def test_learn_pieces_is_tensorflow_texts_learner(sentences, capsys):
    counts = count_words(sentences, verbose=0)
    reserved = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    expected = learner.learn(counts, 300, reserved, lower_thresh=2)
    assert learn_pieces(counts, 300, reserved) == expected
    assert "trial" in capsys.readouterr().out


@pytest.mark.slow
def test_vocabulary_layout_and_tokenizer(sentences, tmp_path):
    path = tmp_path / "vocab.txt"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    tokens = build_vocabulary_file([corpus], path, 700)
    assert len(tokens) == 700
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert load_vocabulary(path) == tokens
    assert any(t.startswith("##") for t in tokens)
    tokenizer = BertTokenizer(str(path))
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id,
            tokenizer.sep_id, tokenizer.mask_id) == (0, 1, 2, 3, 4)
    ids = tokenizer.tokenize(sentences[:200]).flat_values.numpy()
    # The vocabulary covers its own corpus: almost no [UNK] and the pieces
    # are real subwords, not only single characters.
    assert (ids == tokenizer.unk_id).mean() < 0.005
    assert len(ids) < 0.6 * sum(len(s) for s in sentences[:200])
    assert tokenizer.detokenize(
        tokenizer.tokenize(["the city of"]))[0].numpy() == b"the city of"


def test_bert_positions_with_unused_tokens(sentences):
    tokens = build_vocabulary(sentences[:100], 400, num_unused=99)
    assert len(tokens) == 400
    assert [tokens.index(t) for t in
            ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [0, 100, 101, 102, 103]
    assert tokens[1] == "[unused0]" and len(set(tokens)) == 400


def test_too_small_vocabulary(sentences):
    with pytest.raises(ValueError, match="vocab_size"):
        build_vocabulary(sentences, 5)
