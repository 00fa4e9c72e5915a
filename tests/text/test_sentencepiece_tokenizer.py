"""Tests for tfbert.text.SentencePieceTokenizer: id parity with HF's
AlbertTokenizer on real text, with a SentencePiece unigram model trained on
real Wikipedia text (tests/zoo_checkpoints.py).

HF's Rust Unigram and the SentencePiece library (which tf-text runs, as did
the original ALBERT) pick different segmentations when two have exactly the
same score, e.g. "000" as "00"+"0" or "0"+"00" when "000" is not a piece.
Such ties are the only differences allowed, and each is checked to be one:
the same pieces' text and the same total score.
"""

import pytest
import sentencepiece
import tensorflow as tf
from transformers import AutoTokenizer

from tfbert.export.serving_ops import saved_model_ops, unservable_ops
from tfbert.text import SentencePieceTokenizer
from zoo_checkpoints import pieces_per_word, real_texts, sample_texts

# tf-text's SentencePiece ops, linked by TF Serving with the rest of
# tf-text.
SENTENCEPIECE_OPS = {"SentencepieceOp", "SentencepieceTokenizeOp"}

HOSTILE = [
    "", " ", "  leading and trailing  ", "multiple   spaces\tand\ttabs\nnl",
    "``LaTeX quotes'' and \"plain\"", "Ünïcödé CAFÉ naïve Ångström",
    "ΣΊΣΥΦΟΣ final sigma", "ﬁ ligature Ⅻ ½ ｆｕｌｌｗｉｄｔｈ", "日本語のテキスト",
    "😀 emoji", "İstanbul ß Straße", "e\u0301 combining",
    "x\u200by zero width", "numbers 1,234.56 and 000 and $1000",
]


@pytest.fixture(scope="module")
def albert_dir(zoo_checkpoints):
    return zoo_checkpoints["albert"]


@pytest.fixture(scope="module")
def tokenizer(albert_dir):
    return SentencePieceTokenizer.from_pretrained(albert_dir)


@pytest.fixture(scope="module")
def hf_tokenizer(albert_dir):
    return AutoTokenizer.from_pretrained(albert_dir)


@pytest.fixture(scope="module")
def piece_scores(albert_dir):
    model = sentencepiece.SentencePieceProcessor(
        model_file=str(albert_dir / "spiece.model"))
    return [model.get_score(i) for i in range(model.get_piece_size())]


def differences(tokenizer, hf_tokenizer, piece_scores, texts,
                batch_size=2048):
    """(text, ours, theirs) where the ids differ; asserts each difference
    is an exact Viterbi tie."""
    tokenize = tf.function(tokenizer.tokenize, reduce_retracing=True)
    ours = []
    for start in range(0, len(texts), batch_size):
        ours += tokenize(tf.constant(texts[start:start + batch_size])
                         ).to_list()
    theirs = hf_tokenizer(texts, add_special_tokens=False)["input_ids"]
    different = [(t, o, h) for t, o, h in zip(texts, ours, theirs) if o != h]
    for text, o, h in different:
        pieces = [[tokenizer.id_to_token(i) for i in ids] for ids in (o, h)]
        assert "".join(pieces[0]) == "".join(pieces[1]), (text, pieces)
        assert sum(piece_scores[i] for i in o) == pytest.approx(
            sum(piece_scores[i] for i in h), abs=1e-4), (text, pieces)
    return different


def test_real_text_sample_matches_hf(tokenizer, hf_tokenizer, piece_scores,
                                     shared_data_dir):
    texts = sample_texts(real_texts(shared_data_dir), per_source=400)
    texts = [t for values in texts.values() for t in values]
    different = differences(tokenizer, hf_tokenizer, piece_scores, texts)
    assert len(different) <= len(texts) // 1000, different


@pytest.mark.slow
def test_every_real_string_matches_hf(tokenizer, hf_tokenizer, piece_scores,
                                      shared_data_dir):
    texts = [t for values in real_texts(shared_data_dir).values()
             for t in values]
    different = differences(tokenizer, hf_tokenizer, piece_scores, texts)
    # Measured: 8 ties in 129,761 texts.
    assert len(different) <= len(texts) // 1000, different


@pytest.mark.parametrize("lowercase,keep_accents",
                         [(True, False), (False, True), (False, False)])
def test_normalisation_options_match_hf(albert_dir, piece_scores, lowercase,
                                        keep_accents):
    ours = SentencePieceTokenizer.from_pretrained(
        albert_dir, lowercase=lowercase, keep_accents=keep_accents)
    theirs = AutoTokenizer.from_pretrained(
        albert_dir, do_lower_case=lowercase, keep_accents=keep_accents)
    assert not differences(ours, theirs, piece_scores, HOSTILE)


def test_literal_special_tokens_are_ordinary_text(tokenizer):
    ids = tokenizer.tokenize(["[CLS] a [SEP] b [MASK] <pad>"]).to_list()[0]
    assert not {tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id,
                tokenizer.pad_id} & set(ids)


def test_saved_model_ops(tokenizer, tmp_path):
    module = tf.Module()
    module.tokenizer = tokenizer
    module.tokenize = tf.function(
        lambda texts: tokenizer.tokenize(texts).to_tensor(-1),
        input_signature=[tf.TensorSpec([None], tf.string)])
    export_dir = str(tmp_path / "spm")
    tf.saved_model.save(module, export_dir)
    assert SENTENCEPIECE_OPS <= saved_model_ops(export_dir)
    assert unservable_ops(export_dir) == []
    texts = tf.constant(["Serving ``works'', doesn't it?", ""])
    restored = tf.saved_model.load(export_dir)
    assert (restored.tokenize(texts).numpy().tolist()
            == tokenizer.tokenize(texts).to_tensor(-1).numpy().tolist())


def test_config_round_trip(tokenizer):
    copy = SentencePieceTokenizer.from_config(tokenizer.get_config())
    texts = ["A round trip through get_config."]
    assert copy.tokenize(texts).to_list() == tokenizer.tokenize(
        texts).to_list()


def test_not_a_model_is_rejected(tmp_path):
    (tmp_path / "spiece.model").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        SentencePieceTokenizer.from_pretrained(tmp_path)


def test_words_match_hf_split_into_words(tokenizer, hf_tokenizer,
                                         shared_data_dir):
    from tfbert.data.conll import read_conll

    sentences = [s.words for s in read_conll(
        shared_data_dir / "conll2003" / "valid.txt")][::10]
    encoding = hf_tokenizer(sentences, is_split_into_words=True,
                            add_special_tokens=False)
    ours = tokenizer.tokenize_words(sentences).to_list()
    for index, words in enumerate(sentences):
        assert ours[index] == pieces_per_word(encoding, index, len(words)), (
            words)
