"""Batches for in-batch-negative losses: no text twice in a batch.

With `MultipleNegativesRankingLoss`, every other example's texts are an
anchor's negatives; a duplicate of the anchor's own positive among them
would be a "negative" equal to the positive, and the loss would push the
model to tell identical texts apart. `no_duplicate_batches` builds an
epoch's batches so that no text (in any column) occurs twice in a batch.
"""

import itertools

import numpy as np
import tensorflow as tf


def no_duplicate_batches(columns, batch_size, seed):
    """One epoch of shuffled index batches in which no text occurs twice.

    Examples are visited in a random order (`seed`); each joins the open
    batch unless one of its texts is already there, in which case it waits
    for a later batch (it keeps its place in the order). Every example is
    in exactly one batch; all batches are full except possibly the last ones
    (when the remaining examples share texts).

    Args:
      columns: a tuple of equal-length lists of str (anchor, positive, ...).
      batch_size: examples per batch.
      seed: int, the order's seed.

    Returns:
      list of int64 np.ndarray, the example indices of each batch.
    """
    count = len(columns[0])
    order = np.random.default_rng(seed).permutation(count)
    waiting = dict.fromkeys(order.tolist())
    batches = []
    while waiting:
        batch, texts = [], set()
        for index in waiting:
            row = {column[index] for column in columns}
            if texts.isdisjoint(row):
                batch.append(index)
                texts |= row
                if len(batch) == batch_size:
                    break
        for index in batch:
            del waiting[index]
        batches.append(np.asarray(batch, np.int64))
    return batches


def no_duplicate_dataset(columns, labels, batch_size, seed=0):
    """An endless stream of `no_duplicate_batches` epochs, each drawn anew
    (seed, seed + 1, ...).

    Args:
      columns: a tuple of equal-length lists of str.
      labels: float32 array [n] or [n, ...] (teacher embeddings).
      batch_size: examples per batch.
      seed: int, the first epoch's seed.

    Returns:
      `(dataset, num_batches)`: the dataset yields `(tuple of tf.string [b]
      columns, float32 [b, ...] labels)` without end; `num_batches` is the
      first epoch's count (the `steps_per_epoch` for Keras; when texts
      repeat often, later epochs may hold a batch more or less, and Keras'
      epochs then end a few batches off the sampler's).
    """
    arrays = tuple(np.asarray(list(column), dtype=object)
                   for column in columns)
    labels = np.asarray(labels, np.float32)

    def generate():
        for epoch in itertools.count(seed):
            for batch in no_duplicate_batches(arrays, batch_size, epoch):
                yield (tuple(array[batch].tolist() for array in arrays),
                       labels[batch])

    text_spec = tf.TensorSpec([None], tf.string)
    dataset = tf.data.Dataset.from_generator(generate, output_signature=(
        tuple(text_spec for _ in arrays),
        tf.TensorSpec([None, *labels.shape[1:]], tf.float32)))
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(
        tf.data.INFINITE_CARDINALITY))
    return dataset, len(no_duplicate_batches(arrays, batch_size, seed))
