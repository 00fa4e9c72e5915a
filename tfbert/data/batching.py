"""tf.data batching of packed BERT inputs: by length, or to a fixed shape."""

import numpy as np
import tensorflow as tf

from tfbert.text.windows import (document_windows, special_token_count,
                                 window_counts)

FEATURES = ("input_word_ids", "input_mask", "input_type_ids")


def pack_texts(texts, labels, preprocessor, chunk_size=1024):
    """Tokenizes and packs texts in-graph, one unpadded example per element.

    Args:
      texts: a tuple of one or two lists of strings.
      labels: a list/array of labels, one per text.
      preprocessor: a `Preprocessor` (its `seq_length` is the limit).
      chunk_size: texts tokenized per call (tokenization is batched).

    Returns:
      A dataset of `(features, label)`, features a dict of int32 [length]
      tensors, `length <= preprocessor.seq_length`.
    """
    dataset = tf.data.Dataset.from_tensor_slices((tuple(texts), labels))
    dataset = dataset.batch(chunk_size).map(
        lambda text, label: (preprocessor(text), label),
        num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.unbatch().map(_trim, num_parallel_calls=tf.data.AUTOTUNE)


def _trim(features, label):
    """One packed example without its padding."""
    length = tf.reduce_sum(features["input_mask"])
    return {name: features[name][:length] for name in FEATURES}, label


def count_truncated(texts, preprocessor, chunk_size=1024):
    """How many examples lose tokens to `preprocessor`'s truncation.

    Args:
      texts: a tuple of one or two lists of strings (an example's
        segments).
      preprocessor: a `Preprocessor`.

    Returns:
      The number of examples whose tokens and special tokens together
      exceed `preprocessor.seq_length`.
    """
    specials = special_token_count(preprocessor, len(texts))
    lengths = sum(token_counts(segment, preprocessor.tokenizer, chunk_size)
                  for segment in texts)
    return int(np.sum(lengths + specials > preprocessor.seq_length))


def token_counts(texts, tokenizer, chunk_size=1024):
    """int64 [N]: the tokens of each of `texts` (a list of str)."""
    return np.concatenate([
        tokenizer.tokenize(tf.constant(texts[start:start + chunk_size]))
        .row_lengths().numpy()
        for start in range(0, len(texts), chunk_size)] or [[]]).astype(
            np.int64)


def pack_windows(texts, labels, preprocessor, stride, chunk_size=1024):
    """Like `pack_texts` for one text per example, each cut into strided
    windows (`tfbert.text.windows`) that fit `preprocessor.seq_length`.

    Returns:
      `(dataset, windows_per_text)`: the dataset of `(features, label)`,
      one element per window in text order, each window with its text's
      label; windows_per_text int64 [N].
    """
    max_tokens = preprocessor.seq_length - special_token_count(preprocessor)
    counts = window_counts(token_counts(texts, preprocessor.tokenizer,
                                        chunk_size),
                           max_tokens, stride).numpy()

    def windowed(text, label):
        windows, document = document_windows(
            preprocessor.tokenizer.tokenize(text), max_tokens, stride)
        return tf.data.Dataset.from_tensor_slices(
            (preprocessor.pack([windows]), tf.gather(label, document)))

    dataset = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(
        chunk_size).flat_map(windowed)
    return dataset.map(_trim, num_parallel_calls=tf.data.AUTOTUNE), counts


def batch_examples(dataset, batch_size, *, max_seq_length, by_length=True,
                   pad_to_max_length=False, drop_remainder=False):
    """Batches unpadded examples.

    With `pad_to_max_length` every batch is [batch_size, max_seq_length]
    (fixed shapes for TPU/XLA). Otherwise each batch is padded only to its
    longest sequence; with `by_length`, examples are first grouped into
    length buckets (16-token wide) so batches hold similar lengths. Bucketing
    reorders examples: use `by_length=False` where order matters
    (prediction).
    """
    if pad_to_max_length:
        shapes = ({name: [max_seq_length] for name in FEATURES},
                  dataset.element_spec[1].shape)
        return dataset.padded_batch(batch_size, padded_shapes=shapes,
                                    drop_remainder=drop_remainder)
    if not by_length:
        return dataset.padded_batch(batch_size, drop_remainder=drop_remainder)
    boundaries = list(range(17, max_seq_length + 1, 16))
    return dataset.bucket_by_sequence_length(
        lambda features, label: tf.shape(features["input_word_ids"])[0],
        bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        drop_remainder=drop_remainder)


def count_batches(dataset):
    """Number of elements of a finite dataset (iterates it once)."""
    return int(dataset.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))


def prefetch_for_keras(dataset):
    """`dataset` with its next batches prefetched, as the task modules hand it
    to Keras `fit`/`evaluate`/`predict`. Elements are unchanged.

    tf.data's autotuning model is off for the whole pipeline: `AUTOTUNE`
    map parallelism then stays at its starting value (one call per core, at
    most 16) and `AUTOTUNE` prefetch buffers still grow on their own. The
    model's background thread sleeps between passes for a period that
    doubles up to 60 s, and freeing an iterator waits for that thread, so
    collecting the iterators of finished `fit` calls could stall for up to
    that period (the A/B of this change: benchmarks/RESULTS.md, "One SST-2
    epoch"). (Under a tf.distribute strategy other than the default one,
    Keras reads the dataset through per-device iterators of TensorFlow's own
    making, which keep the model.)
    """
    return without_autotuning(dataset.prefetch(tf.data.AUTOTUNE))


def without_autotuning(dataset):
    """`dataset` with tf.data's autotuning model off for its whole pipeline
    (see `prefetch_for_keras`)."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
