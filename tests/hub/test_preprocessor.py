"""The TF Hub preprocessor export, against tf-text's packing ops (what TF
Model Garden's preprocessor runs) and tfbert's `BertPreprocessor`."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from tfbert.export.serving_ops import saved_model_ops, unservable_ops
from tfbert.hub.preprocessor import bert_pack_inputs, round_robin_lengths
from tfbert.text import BertPreprocessor

CLS, SEP, PAD = 101, 102, 0


def _tf_text_pack(segments, seq_length):
    """Model Garden's packing: RoundRobinTrimmer, combine_segments,
    pad_model_inputs."""
    trimmed = tf_text.RoundRobinTrimmer(
        seq_length - len(segments) - 1).trim(segments)
    ids, types = tf_text.combine_segments(trimmed, CLS, SEP)
    word_ids, mask = tf_text.pad_model_inputs(ids, seq_length, pad_value=PAD)
    type_ids, _ = tf_text.pad_model_inputs(types, seq_length, pad_value=0)
    return {"input_word_ids": word_ids, "input_mask": mask,
            "input_type_ids": type_ids}


def _assert_same_inputs(got, expected):
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def _random_segment(rng, batch, max_length):
    lengths = rng.integers(0, max_length + 1, size=batch)
    return tf.RaggedTensor.from_row_lengths(
        rng.integers(1000, 2000, size=int(lengths.sum())).astype(np.int32),
        lengths)


@pytest.mark.parametrize("num_segments", [1, 2, 3])
def test_round_robin_lengths_match_tf_text(num_segments):
    rng = np.random.default_rng(num_segments)
    segments = [_random_segment(rng, 64, 12) for _ in range(num_segments)]
    lengths = tf.stack([s.row_lengths() for s in segments], axis=1)
    for budget in (0, 1, 4, 7, 20, 40):
        expected = tf_text.RoundRobinTrimmer(budget).trim(segments)
        got = round_robin_lengths(tf.cast(lengths, tf.int32),
                                  tf.constant(budget))
        np.testing.assert_array_equal(
            got, np.stack([t.row_lengths() for t in expected], axis=1),
            err_msg=f"budget {budget}")


@pytest.mark.parametrize("num_segments", [1, 2, 3])
def test_bert_pack_inputs_matches_tf_text(num_segments):
    rng = np.random.default_rng(10 + num_segments)
    segments = [_random_segment(rng, 32, 10) for _ in range(num_segments)]
    for seq_length in (num_segments + 1, 9, 16, 40):
        _assert_same_inputs(
            bert_pack_inputs(segments, seq_length, CLS, SEP, PAD),
            _tf_text_pack(segments, seq_length))


def test_bert_pack_inputs_flattens_words():
    words = tf.ragged.constant([[[5, 6], [7]], [[8]]], dtype=tf.int32)
    got = bert_pack_inputs([words], 5, CLS, SEP, PAD)
    np.testing.assert_array_equal(got["input_word_ids"],
                                  [[CLS, 5, 6, 7, SEP], [CLS, 8, SEP, 0, 0]])
    np.testing.assert_array_equal(got["input_mask"],
                                  [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])


@pytest.fixture(scope="module")
def loaded(tfbert_hub):
    return tf.saved_model.load(str(tfbert_hub["preprocessor_dir"]))


@pytest.mark.slow
def test_root_call_equals_bert_preprocessor_on_real_text(
        loaded, tfbert_hub, sst2_sentences):
    texts = tf.constant(sst2_sentences)
    expected = BertPreprocessor(tfbert_hub["tokenizer"], seq_length=32)(texts)
    _assert_same_inputs(loaded(texts), expected)


def test_tokenize_gives_words_of_wordpieces(loaded, tfbert_hub, minilm_dir,
                                            sst2_sentences):
    from tokenizers import BertWordPieceTokenizer

    hf = BertWordPieceTokenizer(str(minilm_dir / "vocab.txt"), lowercase=True)
    texts = ["Tokenization, world!"] + sst2_sentences[:200]
    expected = []
    for encoding in hf.encode_batch(texts, add_special_tokens=False):
        words = {}
        for token_id, word in zip(encoding.ids, encoding.word_ids):
            words.setdefault(word, []).append(token_id)
        expected.append([words[w] for w in sorted(words)])
    got = loaded.tokenize(tf.constant(texts))
    assert got.ragged_rank == 2
    assert got.to_list() == expected
    tokenizer = tfbert_hub["tokenizer"]
    special = {k: int(v) for k, v in
               loaded.tokenize.get_special_tokens_dict().items()}
    assert special == {"vocab_size": tokenizer.vocab_size,
                       "start_of_sequence_id": CLS, "end_of_segment_id": SEP,
                       "padding_id": PAD,
                       "mask_id": tokenizer.token_to_id("[MASK]")}


@pytest.mark.parametrize("seq_length", [24, 64])
def test_bert_pack_inputs_on_real_pairs(loaded, mrpc_pairs, seq_length):
    first, second = (loaded.tokenize(tf.constant(texts))
                     for texts in mrpc_pairs)
    got = loaded.bert_pack_inputs([first, second],
                                  seq_length=tf.constant(seq_length))
    assert got["input_word_ids"].shape == (len(mrpc_pairs[0]), seq_length)
    _assert_same_inputs(got, _tf_text_pack(
        [first.merge_dims(1, 2), second.merge_dims(1, 2)], seq_length))


def test_default_seq_length_and_serving_ops(loaded, tfbert_hub):
    tokens = loaded.tokenize(tf.constant(["a b c"]))
    assert loaded.bert_pack_inputs([tokens])["input_mask"].shape == (1, 32)
    directory = str(tfbert_hub["preprocessor_dir"])
    assert unservable_ops(directory) == []
    assert not {"RoundRobinTrim", "FastBertNormalize"} & {
        op.split(">")[-1] for op in saved_model_ops(directory)}
