"""`BertPreprocessor`: raw text (one or two segments) to BERT model inputs."""

import keras
import numpy as np
import tensorflow as tf

from tfbert.text.bert_tokenizer import BertTokenizer
from tfbert.text.packing_layout import BERT_LAYOUT
from tfbert.text.segment_preprocessor import (SegmentPreprocessor,
                                              truncated_lengths)


@keras.saving.register_keras_serializable(package="tfbert")
class BertPreprocessor(SegmentPreprocessor):
    """Tokenizes, truncates and packs one or two text segments.

    Packing is `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`; `input_type_ids`
    are 0 on [CLS], A and the first [SEP], 1 on B and the last [SEP];
    `input_mask` is 1 on real tokens; padding uses id 0.

    Truncation (only core TF ops, so any TF Serving can run it):
      * `"longest_first"`: exactly HF `tokenizers`' LongestFirst. With a
        budget of `n = seq_length - 3` tokens for a pair, nothing is cut if
        `len(A) + len(B) <= n`; if the shorter segment fits in half the
        budget it is kept and the longer one gets the rest; otherwise the
        shorter gets `n // 2` and the longer `n // 2 + n % 2` (on equal
        lengths B counts as the longer). This is the original BERT "pop from
        the longer segment" rule except when both segments are cut, `n` is
        odd and `len(A) <= len(B)`: original BERT then gives the odd token to
        A, HF (and we) to B.
      * `"waterfall"`: A keeps up to `n` tokens, B gets what is left.
      A single segment is simply cut to `seq_length - 2`.

    Args:
      tokenizer: a `BertTokenizer`.
      seq_length: length of the packed sequences (at least 2; pairs need 3).
      truncation: `"longest_first"` or `"waterfall"`.
      pad_to_seq_length: pad every batch to `seq_length`; if False, pad only
        to the longest packed sequence in the batch.

    Example:
      >>> pre = BertPreprocessor.from_pretrained("minilm-l6-h384-uncased",
      ...                                        seq_length=8)
      >>> out = pre((tf.constant(["How old are you?"]), tf.constant(["Six."])))
      >>> out["input_word_ids"].numpy()  # "you ?" cut: A keeps 8 - 3 - 2
      array([[ 101, 2129, 2214, 2024,  102, 2416, 1012,  102]], dtype=int32)
      >>> out["input_type_ids"].numpy()
      array([[0, 0, 0, 0, 0, 1, 1, 1]], dtype=int32)
    """

    # Where the special tokens go, for code that packs its own windows.
    layout = BERT_LAYOUT

    def __init__(self, tokenizer, seq_length=128, truncation="longest_first",
                 pad_to_seq_length=True, **kwargs):
        super().__init__(seq_length, truncation, pad_to_seq_length, **kwargs)
        if not isinstance(tokenizer, BertTokenizer):
            raise TypeError(
                f"tokenizer must be a BertTokenizer, got {type(tokenizer)}")
        if self.seq_length < 2:
            raise ValueError(
                f"seq_length must be >= 2 ([CLS] and [SEP]), got {seq_length}")
        self.tokenizer = tokenizer

    def __call__(self, inputs, *args, **kwargs):
        # Keras only accepts tensors positionally. A python list of str is
        # one segment (a batch of texts), not a list of segments.
        def as_tensor(x):
            if isinstance(x, (str, bytes, list, np.ndarray)):
                return tf.convert_to_tensor(x, tf.string)
            return x

        if isinstance(inputs, (list, tuple)) and inputs and all(
                isinstance(x, (str, bytes)) for x in inputs):
            inputs = as_tensor(list(inputs))
        elif isinstance(inputs, (list, tuple)):
            inputs = tuple(as_tensor(x) for x in inputs)
        else:
            inputs = as_tensor(inputs)
        return super().__call__(inputs, *args, **kwargs)

    @tf.autograph.experimental.do_not_convert
    def pack(self, segments):
        """Truncates and packs already tokenized segments.

        Args:
          segments: list of 1 or 2 int32 `tf.RaggedTensor` `[batch, (tokens)]`
            of WordPiece ids without special tokens.

        Returns:
          The same dict as `call`.
        """
        segments = list(self._as_segments(segments))
        budget = self._token_budget(len(segments), 1 + len(segments))
        segments = [tf.cast(s, tf.int32) for s in segments]
        for s in segments:
            if s.ragged_rank != 1:
                raise ValueError("segments must be [batch, (tokens)] ragged "
                                 f"tensors, got ragged rank {s.ragged_rank}")
        lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
        keep = truncated_lengths(lengths, budget, self.truncation)
        packed_length = 1 + len(segments) + tf.add_n(keep)  # [batch]

        # Dense index arithmetic instead of ragged concat / to_tensor: the
        # same result from ~10x fewer graph ops, which keeps tracing (and
        # SavedModel export) fast.
        if self.pad_to_seq_length:
            width = self.seq_length
        else:
            # Never narrower than the special tokens, so an empty batch is
            # [0, 1 + segments] and slicing [:, 0] (the pooler) stays valid.
            width = tf.maximum(tf.reduce_max(packed_length),
                               1 + len(segments))
        batch = tf.size(packed_length)
        position = tf.tile(tf.range(width)[tf.newaxis, :], [batch, 1])
        word_ids = tf.where(position == 0, self.tokenizer.cls_id,
                            self.tokenizer.pad_id)
        type_ids = tf.zeros_like(word_ids)
        segment_start = tf.ones_like(packed_length)[:, tf.newaxis]
        for index, (segment, kept) in enumerate(zip(segments, keep)):
            sep_position = segment_start + kept[:, tf.newaxis]
            in_segment = (position >= segment_start) & (position < sep_position)
            # A trailing 0 keeps the gather valid when every row is empty.
            values = tf.concat([segment.values, [0]], axis=0)
            source = (tf.cast(segment.row_starts(), tf.int32)[:, tf.newaxis]
                      + position - segment_start)
            source = tf.clip_by_value(source, 0, tf.size(values) - 1)
            word_ids = tf.where(in_segment, tf.gather(values, source),
                                word_ids)
            word_ids = tf.where(position == sep_position,
                                self.tokenizer.sep_id, word_ids)
            if index == 1:
                type_ids = tf.cast((position >= segment_start)
                                   & (position <= sep_position), tf.int32)
            segment_start = sep_position + 1
        mask = tf.cast(position < packed_length[:, tf.newaxis], tf.int32)
        outputs = {"input_word_ids": word_ids, "input_mask": mask,
                   "input_type_ids": type_ids}
        return self._with_static_width(outputs)

    def get_config(self):
        config = super().get_config()
        tokenizer = self.tokenizer.get_config()
        config.update({
            "vocabulary": tokenizer["vocabulary"],
            "lowercase": tokenizer["lowercase"],
            "strip_accents": tokenizer["strip_accents"],
            "tokenize_chinese_chars": tokenizer["tokenize_chinese_chars"],
            "max_chars_per_word": tokenizer["max_chars_per_word"],
        })
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        tokenizer = BertTokenizer(
            config.pop("vocabulary"),
            lowercase=config.pop("lowercase"),
            strip_accents=config.pop("strip_accents"),
            tokenize_chinese_chars=config.pop("tokenize_chinese_chars", True),
            max_chars_per_word=config.pop("max_chars_per_word", 100))
        return cls(tokenizer, **config)

    @classmethod
    def from_pretrained(cls, name_or_path, seq_length=128, **kwargs):
        """A preprocessor with the tokenizer of a preset or directory.

        Args:
          name_or_path: as for `BertTokenizer.from_pretrained`.
          seq_length: packed length.
          **kwargs: `truncation`, `pad_to_seq_length` and Layer arguments go
            to the preprocessor; tokenizer arguments (`lowercase`,
            `strip_accents`, ...) to the tokenizer.
        """
        tokenizer_args = {k: kwargs.pop(k) for k in (
            "lowercase", "strip_accents", "tokenize_chinese_chars",
            "max_chars_per_word") if k in kwargs}
        tokenizer = BertTokenizer.from_pretrained(name_or_path,
                                                  **tokenizer_args)
        return cls(tokenizer, seq_length=seq_length, **kwargs)
