"""Words to subword windows for token classification, and back.

Each word is split into pieces by the family's tokenizer (`tokenize_words`:
WordPiece, byte-level BPE with a space before every word, or SentencePiece,
as HF's `is_split_into_words=True`, which HF's run_ner uses with
`add_prefix_space=True` for RoBERTa); its FIRST piece carries the word's
label and the other pieces get `IGNORE_LABEL` (-100), which the loss and the
metrics skip, as run_ner does by default. A word that normalises to no
pieces at all (e.g. only control characters) is fed as one unknown token,
so every word has a first piece.

A sentence longer than a window (`max_seq_length` minus the layout's special
tokens) is cut into overlapping windows of whole words, each packed as the
family packs one segment (its `PackingLayout`: `[CLS] pieces [SEP]`,
RoBERTa's `<s> pieces </s>`). Consecutive
windows start `window_stride` pieces apart (rounded to a word start), so they
overlap and every word is inside at least one window. A single word longer
than a whole window keeps only its first pieces (its label is on the first).
Per-word predictions are stitched back from the window in which the word has
the most context on both sides (as for SQuAD's doc stride), so no word is
ever dropped.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from tfbert.text.packing_layout import BERT_LAYOUT

# Label id of positions the loss and the metrics skip (non-first pieces,
# special tokens, padding), as in HF transformers.
IGNORE_LABEL = -100


@dataclasses.dataclass
class NerFeatures:
    """Packed windows (unpadded: one int32 array per window).

    Attributes:
      input_word_ids: per window, the packed ids (`[CLS] pieces [SEP]`),
        int32 [length].
      labels: per window, int32 [length]: the word's label id on each word's
        first piece, IGNORE_LABEL elsewhere (and everywhere when unlabeled).
      word_index: per window, int32 [length]: the index in its sentence of
        the word whose first piece is at this position, -1 elsewhere.
      sentence_index: int [num_windows]: the sentence of each window.
      context: per window, int32 [length]: for first pieces, min(words to
        the left, words to the right) inside the window; -1 elsewhere.
      num_words: int [num_sentences]: words per sentence.
    """

    input_word_ids: list
    labels: list
    word_index: list
    sentence_index: np.ndarray
    context: list
    num_words: np.ndarray

    def __len__(self):
        return len(self.input_word_ids)

    def concatenate(self, other):
        """These windows, then `other`'s (its sentences numbered after
        these)."""
        return NerFeatures(
            self.input_word_ids + other.input_word_ids,
            self.labels + other.labels, self.word_index + other.word_index,
            np.concatenate([self.sentence_index,
                            other.sentence_index + len(self.num_words)]),
            self.context + other.context,
            np.concatenate([self.num_words, other.num_words]))

    def dataset(self, labels=None):
        """A `tf.data.Dataset` of unpadded `(features, labels)` windows:
        features a dict of int32 [length] `input_word_ids`, `input_mask`,
        `input_type_ids`; labels int32 [length] (`self.labels`), or the rows
        of `labels`, one array [length, ...] per window, in their dtype."""
        labels = self.labels if labels is None else labels

        def generate():
            for ids, window_labels in zip(self.input_word_ids, labels):
                yield ({"input_word_ids": ids,
                        "input_mask": np.ones_like(ids),
                        "input_type_ids": np.zeros_like(ids)}, window_labels)

        spec = tf.TensorSpec([None], tf.int32)
        first = np.asarray(labels[0]) if len(labels) else np.zeros(0, np.int32)
        label_spec = tf.TensorSpec([None, *first.shape[1:]],
                                   tf.as_dtype(first.dtype))
        return tf.data.Dataset.from_generator(
            generate, output_signature=(
                {"input_word_ids": spec, "input_mask": spec,
                 "input_type_ids": spec}, label_spec))


def plan_windows(piece_counts, max_pieces, window_stride):
    """Splits a sentence into overlapping windows of whole words.

    Args:
      piece_counts: pieces per word (each >= 1).
      max_pieces: pieces a window may hold (max_seq_length minus the
        special tokens).
      window_stride: pieces between the starts of consecutive windows.

    Returns:
      A list of `(first_word, end_word)` (end exclusive) covering every word.
    """
    num_words = len(piece_counts)
    starts = np.concatenate([[0], np.cumsum(piece_counts)])
    windows = []
    first = 0
    while first < num_words:
        end = first
        while end < num_words and starts[end + 1] - starts[first] <= max_pieces:
            end += 1
        end = max(end, first + 1)
        windows.append((first, end))
        if end == num_words:
            break
        target = starts[first] + window_stride
        following = first + 1
        while following < end and starts[following] < target:
            following += 1
        first = following
    return windows


def convert_to_features(sentences_words, sentences_label_ids, tokenizer,
                        max_seq_length, window_stride=None,
                        chunk_size=2048, layout=BERT_LAYOUT):
    """Tokenizes words and packs them into labelled windows.

    Args:
      sentences_words: list of sentences, each a list of str words.
      sentences_label_ids: matching lists of int label ids, or None
        (unlabeled: every label is IGNORE_LABEL).
      tokenizer: the family's tokenizer (`BertTokenizer`,
        `ByteBpeTokenizer` or `SentencePieceTokenizer`).
      max_seq_length: longest window, special tokens included (room for at
        least one piece).
      window_stride: pieces between window starts; default half a window.
      chunk_size: sentences tokenized per `tokenize_words` call.
      layout: the family's `PackingLayout` (`preprocessor.layout`).

    Returns:
      `NerFeatures`.
    """
    max_pieces = max_seq_length - layout.num_special_tokens(1)
    if max_pieces < 1:
        raise ValueError(f"max_seq_length must be >= "
                         f"{layout.num_special_tokens(1) + 1}, got "
                         f"{max_seq_length}")
    window_stride = window_stride or max(1, max_pieces // 2)
    if not 1 <= window_stride <= max_pieces:
        raise ValueError(f"window_stride must be in [1, {max_pieces}], got "
                         f"{window_stride}")
    pieces = []
    for begin in range(0, len(sentences_words), chunk_size):
        chunk = sentences_words[begin:begin + chunk_size]
        words = tf.RaggedTensor.from_row_lengths(
            tf.constant([w for s in chunk for w in s], tf.string),
            tf.constant([len(s) for s in chunk], tf.int64))
        ragged = tokenizer.tokenize_words(words)
        flat = ragged.flat_values.numpy()
        sentence_splits, word_splits = (
            splits.numpy() for splits in ragged.nested_row_splits)
        word_pieces = [flat[a:b] for a, b in zip(word_splits[:-1],
                                                 word_splits[1:])]
        pieces.extend(word_pieces[a:b] for a, b in zip(sentence_splits[:-1],
                                                       sentence_splits[1:]))

    start_ids = layout.token_ids(tokenizer, "start")
    end_ids = layout.token_ids(tokenizer, "end")
    features = NerFeatures([], [], [], [], [], np.array(
        [len(s) for s in sentences_words], np.int64))
    for index, word_pieces in enumerate(pieces):
        word_pieces = [p if len(p) else [tokenizer.unk_id] for p in word_pieces]
        label_ids = (sentences_label_ids[index] if sentences_label_ids
                     is not None else [IGNORE_LABEL] * len(word_pieces))
        windows = plan_windows([len(p) for p in word_pieces], max_pieces,
                               window_stride)
        for first, end in windows:
            ids = list(start_ids)
            labels, word_index, context = ([IGNORE_LABEL] * len(ids),
                                           [-1] * len(ids), [-1] * len(ids))
            for w in range(first, end):
                piece_ids = list(word_pieces[w][
                    :max_pieces - len(ids) + len(start_ids)])
                ids.extend(piece_ids)
                labels.extend([label_ids[w]]
                              + [IGNORE_LABEL] * (len(piece_ids) - 1))
                word_index.extend([w] + [-1] * (len(piece_ids) - 1))
                context.extend([min(w - first, end - 1 - w)]
                               + [-1] * (len(piece_ids) - 1))
            ids.extend(end_ids)
            for values, extra in ((labels, IGNORE_LABEL), (word_index, -1),
                                  (context, -1)):
                values.extend([extra] * len(end_ids))
            features.input_word_ids.append(np.array(ids, np.int32))
            features.labels.append(np.array(labels, np.int32))
            features.word_index.append(np.array(word_index, np.int32))
            features.context.append(np.array(context, np.int32))
            features.sentence_index.append(index)
    features.sentence_index = np.array(features.sentence_index, np.int64)
    return features


def stitch_predictions(features, token_predictions):
    """Per-window token predictions back to one prediction per word.

    Args:
      features: the `NerFeatures` the predictions were made for.
      token_predictions: per window (in order), a sequence indexable by token
        position (length >= the window's length; padding is ignored), e.g.
        a padded int array [num_windows, seq] or a list of arrays.

    Returns:
      One list per sentence with one prediction per word, taken from the
      window where that word has the most context (the earliest on ties).
    """
    result = [[None] * int(n) for n in features.num_words]
    best = [np.full(int(n), -1) for n in features.num_words]
    for window, sentence in enumerate(features.sentence_index):
        positions = np.nonzero(features.word_index[window] >= 0)[0]
        predictions = token_predictions[window]
        for position in positions:
            word = features.word_index[window][position]
            context = features.context[window][position]
            if context > best[sentence][word]:
                best[sentence][word] = context
                result[sentence][word] = predictions[position]
    return result


def pad_batch(arrays, value, length=None):
    """Stacks 1-D arrays into [batch, length] (default: the longest),
    padding with `value`."""
    length = length or max(len(a) for a in arrays)
    out = np.full((len(arrays), length), value, arrays[0].dtype)
    for row, array in enumerate(arrays):
        out[row, :len(array)] = array
    return out
