"""Learning a WordPiece vocabulary from a corpus.

Words are counted after BERT's basic tokenization (the same splitting
`BertTokenizer` does: whitespace, punctuation and CJK ideographs as separate
words, control characters deleted, lower-casing and accent stripping for an
uncased vocabulary); the pieces are then learned with tensorflow-text's
WordPiece learner (`wordpiece_tokenizer_learner_lib.learn`, the algorithm
behind `bert_vocab_from_dataset`).

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
import unicodedata

from tensorflow_text.tools.wordpiece_vocab import (
    wordpiece_tokenizer_learner_lib as learner)

from tfbert.text.vocab import save_vocabulary


def _is_punctuation(char):
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(char):
    code = ord(char)
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF
            or 0x20000 <= code <= 0x2A6DF or 0x2A700 <= code <= 0x2B73F
            or 0x2B740 <= code <= 0x2B81F or 0x2B920 <= code <= 0x2CEAF
            or 0xF900 <= code <= 0xFAFF or 0x2F800 <= code <= 0x2FA1F)


def _is_deleted(char):
    if char in "\t\n\r":
        return False
    return (unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs")
            or char == "\ufffd")


def basic_tokenize(text, lowercase=True):
    """BERT's basic tokenization of one text into words (Python).

    Args:
      text: str.
      lowercase: lower-case and strip accents (uncased vocabularies).

    Returns:
      list of str words: whitespace removed, every punctuation character and
      CJK ideograph its own word.
    """
    text = "".join(c for c in text if not _is_deleted(c))
    if lowercase:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    words = []
    current = []
    for char in text:
        if char.isspace():
            if current:
                words.append("".join(current))
                current = []
        elif _is_punctuation(char) or _is_cjk(char):
            if current:
                words.append("".join(current))
                current = []
            words.append(char)
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def count_words(lines, lowercase=True):
    """`collections.Counter` of basic-tokenized words over an iterable of
    str lines."""
    counts = collections.Counter()
    for line in lines:
        counts.update(basic_tokenize(line, lowercase))
    return counts


def special_tokens(num_unused=0):
    """The reserved tokens, in vocabulary order (see the module docstring)."""
    return (["[PAD]"] + [f"[unused{i}]" for i in range(num_unused)]
            + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"])


def build_vocabulary(lines, vocab_size, lowercase=True, num_unused=0,
                     max_unique_chars=1000, max_token_length=50,
                     min_count=2):
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

    Returns:
      list of str, token `i` has id `i`. The learner may stop a few percent
      under `vocab_size` (the rest is filled with further [unusedN] tokens)
      or above it (the rarest pieces are dropped), so the size is exact.

    Raises:
      ValueError: `vocab_size` is too small for the reserved tokens and the
        corpus' characters, or the corpus is empty.
    """
    counts = count_words(lines, lowercase)
    if not counts:
        raise ValueError("the corpus has no words")
    reserved = special_tokens(num_unused)
    if vocab_size <= len(reserved):
        raise ValueError(f"vocab_size={vocab_size} leaves no room after "
                         f"{len(reserved)} reserved tokens")
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
