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
    # Progbar throttles its updates: always show the final count.
    progress.update(done, finalize=True)
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


def learn_pieces(counts, vocab_size, reserved, min_count=2,
                 max_unique_chars=1000, max_token_length=50, verbose=1):
    """tensorflow-text's `learner.learn` (with its default settings) plus a
    progress bar: the same steps, its recursive binary search over the
    word-count threshold written as a loop that reports each trial, one
    full learning pass over the words each.

    Args:
      counts: dict word -> count.
      vocab_size: the learner's target size.
      reserved: reserved tokens, in vocabulary order.
      min_count, max_unique_chars, max_token_length: see `build_vocabulary`.
      verbose: 0 silent, 1 a progress bar over the threshold trials.

    Returns:
      list of str: reserved tokens, single characters, then pieces.
    """
    params = learner.Params(
        upper_thresh=int(1e7), lower_thresh=min_count, num_iterations=4,
        max_input_tokens=int(5e6), max_token_length=max_token_length,
        max_unique_chars=max_unique_chars, vocab_size=vocab_size,
        slack_ratio=0.05, include_joiner_token=True, joiner="##",
        reserved_tokens=reserved)
    upper, lower = learner.get_search_threshs(
        counts.items(), params.upper_thresh, params.lower_thresh)
    words = learner.get_input_words(counts.items(), reserved,
                                    max_token_length)
    words = learner.filter_input_words(
        words, learner.get_allowed_chars(words, max_unique_chars),
        params.max_input_tokens)
    # Halving [lower, upper] ends within this many trials.
    most_trials = max(1, (upper - lower + 1).bit_length())
    progress = keras.utils.Progbar(most_trials, verbose=verbose,
                                   unit_name="trial",
                                   stateful_metrics=["tokens"])
    slack = params.slack_ratio * vocab_size
    trial = 0
    while True:
        trial += 1
        threshold = (upper + lower) // 2
        tokens = learner.learn_with_thresh(words, threshold, params)
        progress.update(trial, [("tokens", len(tokens))])
        within_slack = 0 <= vocab_size - len(tokens) <= slack
        if within_slack or lower >= upper or threshold <= 1:
            progress.update(most_trials, [("tokens", len(tokens))],
                            finalize=True)
            return tokens
        if len(tokens) > vocab_size:
            lower = threshold + 1
        else:
            upper = threshold - 1


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
      verbose: 0 silent, 1 progress bars while counting words and while
        learning pieces.

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
    tokens = learn_pieces(counts, vocab_size, reserved, min_count,
                          max_unique_chars, max_token_length, verbose)
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
