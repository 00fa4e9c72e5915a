"""Learning a WordPiece vocabulary from a corpus.

Words are counted after BERT's basic tokenization, done by
`BertTokenizer.words` itself (whitespace, punctuation and CJK ideographs as
separate words, control characters deleted, lower-casing and accent
stripping for an uncased vocabulary); the pieces are then learned with
tensorflow-text's WordPiece learner (`wordpiece_tokenizer_learner_lib.learn`,
the algorithm behind `bert_vocab_from_dataset`).

Layout of the result (ids are line numbers):

    0            [PAD]
    1 .. U       [unused0] .. [unused{U-1}]   (U = num_unused, default 0)
    U+1 .. U+4   [UNK] [CLS] [SEP] [MASK]
    then         the single characters, then the learned pieces by frequency
    at the end   [unused{U}] ... filling up to exactly `vocab_size`

With `num_unused=99` the special tokens sit exactly where Google's BERT
vocabularies have them ([PAD]=0, [UNK]=100, [CLS]=101, [SEP]=102,
[MASK]=103).
"""

import collections

import keras
import numpy as np
from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner)

from tfbert.text.bert_tokenizer import BertTokenizer
from tfbert.text.vocab import SPECIAL_TOKENS, save_vocabulary


def count_words(lines, lowercase=True, chunk_size=8192, verbose=1):
    """`collections.Counter` of BERT's basic-tokenized words (str) over an
    iterable of str lines, split and normalised by `BertTokenizer.words`.

    Args:
      lines: iterable of str.
      lowercase: lower-case and strip accents (uncased vocabularies).
      chunk_size: lines per tokenizer call.
      verbose: 0 silent, 1 a progress bar over the lines read.
    """
    # Splitting does not depend on the vocabulary: the special tokens do.
    splitter = BertTokenizer(list(SPECIAL_TOKENS), lowercase=lowercase)
    progress = keras.utils.Progbar(None, verbose=verbose, unit_name="line")
    counts = collections.Counter()
    done = 0
    for chunk in _chunks(lines, chunk_size):
        words = splitter.words(chunk).flat_values.numpy()
        unique, frequency = np.unique(words, return_counts=True)
        counts.update({word.decode("utf-8"): int(n)
                       for word, n in zip(unique, frequency)})
        done += len(chunk)
        progress.update(done)
    return counts


def _chunks(items, size):
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def special_tokens(num_unused=0):
    """The reserved tokens, in vocabulary order (see the module docstring)."""
    return (["[PAD]"] + [f"[unused{i}]" for i in range(num_unused)]
            + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"])


def build_vocabulary(lines, vocab_size, lowercase=True, num_unused=0,
                     max_unique_chars=1000, max_token_length=50,
                     min_count=2, verbose=1):
    """Learns a WordPiece vocabulary of exactly `vocab_size` tokens.

    Args:
      lines: iterable of str (the corpus; blank lines are harmless).
      vocab_size: number of tokens of the result, reserved ones included.
      lowercase: build an uncased vocabulary (lower-case, strip accents).
      num_unused: [unusedN] tokens after [PAD] (99 reproduces BERT's ids).
      max_unique_chars: alphabet size; words with rarer characters are not
        counted (they will tokenize to [UNK] or pieces).
      max_token_length: longest piece, in characters.
      min_count: lower bound of the learner's frequency threshold search.
      verbose: 0 silent; 1 a progress bar while counting words and a line
        before the learner runs (it reports no progress of its own).

    Returns:
      list of str, token `i` has id `i`. The learner may stop a few percent
      under `vocab_size` (the rest is filled with further [unusedN] tokens)
      or above it (the rarest pieces are dropped), so the size is exact.

    Raises:
      ValueError: `vocab_size` is too small for the reserved tokens and the
        corpus' characters, or the corpus is empty.
    """
    counts = count_words(lines, lowercase, verbose=verbose)
    if not counts:
        raise ValueError("the corpus has no words")
    reserved = special_tokens(num_unused)
    if vocab_size <= len(reserved):
        raise ValueError(f"vocab_size={vocab_size} leaves no room after "
                         f"{len(reserved)} reserved tokens")
    if verbose:
        print(f"Learning {vocab_size} WordPiece tokens from {len(counts)} "
              "distinct words...", flush=True)
    tokens = learner.learn(
        counts, vocab_size, reserved, lower_thresh=min_count,
        max_unique_chars=max_unique_chars, max_token_length=max_token_length)
    # The learner's threshold search can end above `vocab_size`; its output
    # is reserved tokens, then single characters, then pieces by decreasing
    # frequency, so dropping the tail drops the rarest pieces only.
    required = sum(1 for t in tokens
                   if t in reserved or len(t.removeprefix("##")) == 1)
    if required > vocab_size:
        raise ValueError(
            f"vocab_size={vocab_size} is smaller than the {required} "
            "reserved and single-character tokens this corpus needs; raise "
            "vocab_size or lower max_unique_chars")
    tokens = tokens[:vocab_size]
    next_unused = num_unused
    present = set(tokens)
    while len(tokens) < vocab_size:
        token = f"[unused{next_unused}]"
        next_unused += 1
        if token not in present:
            tokens.append(token)
    return tokens


def build_vocabulary_file(corpus_paths, output_path, vocab_size, **kwargs):
    """`build_vocabulary` over corpus files, written to `output_path` (one
    token per line, what `BertTokenizer(output_path)` loads). Returns the
    tokens."""
    def lines():
        for path in corpus_paths:
            with open(path, encoding="utf-8") as f:
                yield from f

    tokens = build_vocabulary(lines(), vocab_size, **kwargs)
    save_vocabulary(tokens, output_path)
    return tokens
