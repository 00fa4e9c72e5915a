"""Strided windows over long texts, in the graph: the same windows for
training data and for a long-document export.

A text of `n` tokens gets windows of at most `max_tokens` tokens starting
every `stride` tokens, until one reaches its end: `1 + ceil(max(n -
max_tokens, 0) / stride)` windows (a text that fits, or an empty one, gets
one).
"""

import tensorflow as tf


def special_token_count(preprocessor, num_segments=1):
    """How many special tokens `preprocessor`'s layout packs around
    `num_segments` segments (those of a one-word example)."""
    probe = [tf.constant(["a"]) for _ in range(num_segments)]
    packed = int(tf.reduce_sum(preprocessor(tuple(probe))["input_mask"]))
    return packed - sum(int(tf.size(preprocessor.tokenizer.tokenize(p)))
                        for p in probe)


def window_counts(num_tokens, max_tokens, stride):
    """int64 [B]: windows of texts of `num_tokens` (int [B]) tokens."""
    stride = min(stride, max_tokens)
    extra = tf.maximum(tf.cast(num_tokens, tf.int64) - max_tokens, 0)
    return 1 + (extra + stride - 1) // stride


def document_windows(tokens, max_tokens, stride):
    """Cuts each text's tokens into strided windows.

    Args:
      tokens: int `tf.RaggedTensor` [B, (n)], one text per row.
      max_tokens: the most tokens of a window (python int > 0).
      stride: tokens between window starts (python int > 0; at most
        `max_tokens` is used, so no token is skipped).

    Returns:
      `(windows, document)`: windows `tf.RaggedTensor` [W, (<= max_tokens)]
      of the same dtype, in text order, and document int64 [W], the row
      of `tokens` each window comes from.
    """
    stride = min(stride, max_tokens)
    lengths = tokens.row_lengths()
    counts = window_counts(lengths, max_tokens, stride)
    document = tf.repeat(tf.range(tf.size(counts, tf.int64)), counts)
    start = tf.ragged.range(counts).flat_values * stride
    length = tf.minimum(tf.cast(max_tokens, tf.int64),
                        tf.gather(lengths, document) - start)
    positions = tf.ragged.range(start, start + length)
    offsets = tf.gather(tokens.row_starts(), document)[:, tf.newaxis]
    return tf.gather(tokens.flat_values, positions + offsets), document
