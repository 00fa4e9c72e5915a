"""`SegmentPreprocessor`: what `BertPreprocessor` and `Preprocessor` share.

Both take one or two text segments, tokenize each, cut them to fit
`seq_length` with the same truncation rules and pack them; they differ only
in how they pack. The segment handling, the truncation arithmetic and the
packing settings (`seq_length`, `truncation`, `pad_to_seq_length`) live here
once.
"""

import keras
import tensorflow as tf

TRUNCATIONS = ("longest_first", "waterfall")


@keras.saving.register_keras_serializable(package="tfbert")
class SegmentPreprocessor(keras.layers.Layer):
    """Base layer: tokenizes one or two segments, then `pack`s them.

    A subclass sets `self.tokenizer` (with `tokenize(texts)`) and defines
    `pack(segments)`.

    Args:
      seq_length: length of the packed sequences.
      truncation: `"longest_first"` (HF's) or `"waterfall"`; see
        `truncated_lengths`.
      pad_to_seq_length: pad every batch to `seq_length`; if False, pad only
        to the longest packed sequence in the batch.
      **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, seq_length, truncation, pad_to_seq_length, **kwargs):
        super().__init__(**kwargs)
        if truncation not in TRUNCATIONS:
            raise ValueError(
                f"truncation must be one of {TRUNCATIONS}, got {truncation!r}")
        self.seq_length = int(seq_length)
        self.truncation = truncation
        self.pad_to_seq_length = bool(pad_to_seq_length)
        self.built = True

    @tf.autograph.experimental.do_not_convert
    def call(self, inputs):
        """Packs raw text.

        Args:
          inputs: tf.string `[batch]` (or a python list / numpy array of
            str), or a tuple/list of one or two such tensors (the segments of
            each example).

        Returns:
          dict of int32 `[batch, seq_length]` tensors (`[batch, longest]`
          without `pad_to_seq_length`): `input_word_ids`, `input_mask`,
          `input_type_ids`.
        """
        segments = self._as_segments(inputs)
        return self.pack([self.tokenizer.tokenize(s) for s in segments])

    def _as_segments(self, inputs):
        """`inputs` (one tensor or a tuple/list of 1 or 2) as a tuple."""
        if isinstance(inputs, dict):
            raise TypeError("inputs must be a tensor or a tuple/list of 1 or "
                            "2 tensors, not a dict")
        if not isinstance(inputs, (tuple, list)):
            inputs = (inputs,)
        if not 1 <= len(inputs) <= 2:
            raise ValueError(f"{type(self).__name__} takes 1 or 2 segments, "
                             f"got {len(inputs)}")
        return tuple(inputs)

    def _token_budget(self, num_segments, num_special_tokens):
        """Tokens left for the segments' text once the special tokens are
        in; ValueError if `seq_length` is too short for them."""
        budget = self.seq_length - num_special_tokens
        if budget < 0:
            raise ValueError(
                f"seq_length {self.seq_length} is too short for "
                f"{num_segments} segments: packing needs "
                f"{num_special_tokens} special tokens")
        return budget

    def _with_static_width(self, outputs):
        """`outputs` (the packed dict), declared `[batch, seq_length]` when
        padded to `seq_length`, so Keras knows the width at trace time."""
        if self.pad_to_seq_length:
            for tensor in outputs.values():
                tensor.set_shape([None, self.seq_length])
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update({
            "seq_length": self.seq_length,
            "truncation": self.truncation,
            "pad_to_seq_length": self.pad_to_seq_length,
        })
        return config


def truncated_lengths(lengths, budget, truncation):
    """How many tokens of each segment are kept.

    Args:
      lengths: list of 1 or 2 int32 `[batch]`, the segments' lengths.
      budget: int, tokens available for all segments together.
      truncation: `"longest_first"` (HF `tokenizers`' LongestFirst) or
        `"waterfall"` (A first, B gets what is left); one segment is simply
        cut to `budget`.

    Returns:
      list of int32 `[batch]`, one per segment.
    """
    if len(lengths) == 1:
        return [tf.minimum(lengths[0], budget)]
    a, b = lengths
    if truncation == "waterfall":
        keep_a = tf.minimum(a, budget)
        return [keep_a, tf.minimum(b, budget - keep_a)]
    shorter = tf.minimum(a, b)
    fits = a + b <= budget
    shorter_kept = 2 * shorter <= budget
    keep_shorter = tf.where(shorter_kept, shorter, budget // 2)
    keep_longer = tf.where(shorter_kept, budget - shorter,
                           budget // 2 + budget % 2)
    # On equal lengths B takes the role of the longer segment (as in HF).
    a_longer = a > b
    keep_a = tf.where(fits, a, tf.where(a_longer, keep_longer, keep_shorter))
    keep_b = tf.where(fits, b, tf.where(a_longer, keep_shorter, keep_longer))
    return [keep_a, keep_b]
