"""Writing a `BertTokenizer` as a TF Hub BERT preprocessor SavedModel.

The interface is that of TF Hub's `bert_en_uncased_preprocess` (TF Model
Garden's `export_preprocessing`):

  * the root is callable on tf.string [batch] and returns the encoder inputs
    `input_word_ids`, `input_mask`, `input_type_ids`, int32
    [batch, seq_length] at the default `seq_length`;
  * `obj.tokenize(texts)`: tf.string [batch] -> int32 ragged
    [batch, (words), (wordpieces)], without special tokens;
    `obj.tokenize.get_special_tokens_dict()` gives the ids packing uses;
  * `obj.bert_pack_inputs(segments, seq_length=...)`: a list of 1 to
    `MAX_SEGMENTS` int32 ragged tensors ([batch, (tokens)] or
    [batch, (words), (wordpieces)]) -> the encoder inputs, with the
    segments cut round-robin to fit.

Only core TensorFlow ops and the tf-text ops of tfbert's tokenizer are used:
round-robin truncation is computed here instead of with tf-text's
`RoundRobinTrimmer`, whose `RoundRobinTrim` op only TF Serving >= 2.20 has.
"""

import os

import tensorflow as tf

from tfbert.hub.saving import save_atomically
from tfbert.utils.atomic import check_writable

# bert_pack_inputs is traced for 1 .. MAX_SEGMENTS segments.
MAX_SEGMENTS = 3


def round_robin_lengths(lengths, budget):
    """How many tokens of each segment round-robin truncation keeps.

    Tokens are handed out one per segment per round, first segment first,
    until `budget` tokens are handed out or every segment is used up.

    Args:
      lengths: int32 [batch, segments], the segment lengths.
      budget: int32 scalar >= 0, the tokens to hand out per example.

    Returns:
      int32 [batch, segments], the kept lengths.
    """
    # cap = the number of complete rounds: the largest k with
    # sum(min(lengths, k)) <= budget.
    rounds = tf.range(budget + 1)
    used = tf.reduce_sum(
        tf.minimum(lengths[:, :, tf.newaxis], rounds[tf.newaxis, tf.newaxis]),
        axis=1)
    cap = tf.reduce_sum(tf.cast(used <= budget, tf.int32), axis=1) - 1
    kept = tf.minimum(lengths, cap[:, tf.newaxis])
    # The last, incomplete round: one more token for the first `left`
    # segments that still have tokens.
    left = budget - tf.reduce_sum(kept, axis=1)
    wants_more = tf.cast(lengths > cap[:, tf.newaxis], tf.int32)
    before = tf.cumsum(wants_more, axis=1, exclusive=True)
    return kept + wants_more * tf.cast(before < left[:, tf.newaxis], tf.int32)


def _keep_first(segment, counts):
    """The first `counts[b]` tokens of each row b of a ragged [batch, (n)]."""
    rows = segment.value_rowids()
    position = (tf.range(tf.size(segment.values, tf.int64), dtype=tf.int64)
                - tf.gather(segment.row_starts(), rows))
    keep = position < tf.cast(tf.gather(counts, rows), tf.int64)
    return tf.RaggedTensor.from_value_rowids(
        tf.boolean_mask(segment.values, keep), tf.boolean_mask(rows, keep),
        nrows=segment.nrows())


def bert_pack_inputs(segments, seq_length, cls_id, sep_id, pad_id):
    """Packs `[CLS] s0 [SEP] s1 [SEP] ...`, cut round-robin to `seq_length`.

    Args:
      segments: list of int32 ragged tensors, [batch, (tokens)] or
        [batch, (words), (wordpieces)].
      seq_length: int32 scalar, the packed length.
      cls_id, sep_id, pad_id: the special token ids.

    Returns:
      dict of int32 [batch, seq_length] tensors `input_word_ids`,
      `input_mask` (1 on tokens) and `input_type_ids` (i on segment i and its
      [SEP], 0 on [CLS]).
    """
    segments = [s.merge_dims(1, -1) if s.ragged_rank > 1 else s
                for s in segments]
    segments = [tf.cast(s, tf.int32) for s in segments]
    seq_length = tf.cast(seq_length, tf.int32)
    budget = tf.maximum(seq_length - 1 - len(segments), 0)
    lengths = tf.stack([tf.cast(s.row_lengths(), tf.int32) for s in segments],
                       axis=1)
    kept = round_robin_lengths(lengths, budget)
    batch = segments[0].nrows(out_type=tf.int32)

    def column(value):
        return tf.RaggedTensor.from_tensor(tf.fill([batch, 1], value))

    words, types = [column(cls_id)], [column(0)]
    for index, segment in enumerate(segments):
        segment = _keep_first(segment, kept[:, index])
        words += [segment, column(sep_id)]
        types += [tf.ones_like(segment) * index, column(index)]
    shape = tf.stack([batch, seq_length])
    words = tf.concat(words, axis=1)
    return {
        "input_word_ids": words.to_tensor(pad_id, shape=shape),
        "input_mask": tf.ones_like(words).to_tensor(0, shape=shape),
        "input_type_ids": tf.concat(types, axis=1).to_tensor(0, shape=shape),
    }


def _callable(function):
    callable_object = tf.train.Checkpoint()
    callable_object.__call__ = function
    return callable_object


def export_preprocessor(tokenizer, export_dir, seq_length=128):
    """Saves `tokenizer` as a TF Hub BERT preprocessor SavedModel.

    Args:
      tokenizer: a `BertTokenizer`.
      export_dir: the SavedModel directory (must not exist or be empty).
      seq_length: the root call's packed length and `bert_pack_inputs`'
        default.

    Returns:
      The absolute path of `export_dir`. The SavedModel loads in a process that imports
      `tensorflow_text` (like every raw-text graph of tfbert) and passes
      `tfbert.export.check_serving_ops`.
    """
    seq_length = int(seq_length)
    if seq_length < 2:
        raise ValueError(f"seq_length must be >= 2, got {seq_length}")
    check_writable(os.fspath(export_dir))
    special = {"cls_id": tokenizer.cls_id, "sep_id": tokenizer.sep_id,
               "pad_id": tokenizer.pad_id}
    text_spec = tf.TensorSpec([None], tf.string)

    @tf.function(input_signature=[text_spec], autograph=False)
    def tokenize(texts):
        words, _, _ = tokenizer.split_words_with_offsets(texts)
        return tokenizer.tokenize_words(words)

    @tf.function(autograph=False)
    def pack(segments, seq_length=seq_length):
        return bert_pack_inputs(segments, seq_length, **special)

    for ragged_rank in (1, 2):
        for count in range(1, MAX_SEGMENTS + 1):
            pack.get_concrete_function(
                [tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32,
                                     ragged_rank=ragged_rank)] * count,
                seq_length=tf.TensorSpec([], tf.int32))

    @tf.function(input_signature=[text_spec], autograph=False)
    def preprocess(texts):
        return bert_pack_inputs([tokenize(texts)], seq_length, **special)

    @tf.function(input_signature=[], autograph=False)
    def special_tokens():
        return {
            "vocab_size": tf.constant(tokenizer.vocab_size, tf.int32),
            "start_of_sequence_id": tf.constant(tokenizer.cls_id, tf.int32),
            "end_of_segment_id": tf.constant(tokenizer.sep_id, tf.int32),
            "padding_id": tf.constant(tokenizer.pad_id, tf.int32),
            "mask_id": tf.constant(tokenizer.mask_id, tf.int32),
        }

    root = _callable(preprocess)
    root.tokenizer = tokenizer
    root.tokenize = _callable(tokenize)
    root.tokenize.get_special_tokens_dict = _callable(special_tokens)
    root.bert_pack_inputs = _callable(pack)
    return save_atomically(root, export_dir, check_ops=True)
