"""WordPiece vocabulary learning."""

import pytest

from tfbert.data.wikipedia import article_sentences, read_wikiextractor
from tfbert.text import BertTokenizer
from tfbert.text.vocab import load_vocabulary
from tfbert.text.vocab_builder import (
    basic_tokenize, build_vocabulary, build_vocabulary_file)


@pytest.fixture(scope="module")
def sentences(shared_data_dir):
    path = shared_data_dir / "wikipedia/enwiki-wikiextractor/AA/wiki_02"
    lines = []
    for _, paragraphs in read_wikiextractor(path):
        lines.extend(article_sentences(paragraphs))
        if len(lines) > 600:
            break
    return lines


def test_basic_tokenize_matches_bert_splitting():
    assert basic_tokenize("Héllo, Wörld!  A\u200bB") == [
        "hello", ",", "world", "!", "ab"]
    assert basic_tokenize("Héllo", lowercase=False) == ["Héllo"]


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
