"""`ByteBpeTokenizer`: RoBERTa's byte-level BPE, in the TensorFlow graph.

Reproduces HF `tokenizers`' ByteLevel pre-tokenizer + BPE model as configured
by `RobertaTokenizerFast` (the GPT-2 scheme), with core TF ops and only the
`RegexSplitWithOffsets` op of tensorflow-text, which every TF Serving since
2.10 links:

  1. Optionally prefix a space (`add_prefix_space`, when the text is not
     empty and does not already start with one).
  2. Split into pre-tokens with the GPT-2 pattern
     `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`.
     RE2 has no look-ahead, so `\\s+(?!\\S)` is rebuilt from offsets: a
     whitespace run followed by more text gives up its last character, which
     joins the next pre-token if it is a plain space and stands alone
     otherwise; a run at the end of the text stays whole. `\\s` is Unicode
     White_Space, as in HF's Oniguruma regex.
  3. Map each UTF-8 byte of a pre-token to its GPT-2 stand-in character
     (printable bytes map to themselves, the others to U+0100 and up).
  4. Apply the BPE merges by rank: repeatedly merge, in every word at once,
     the adjacent pair with the lowest rank (the leftmost one first within a
     run of equal pairs), until no adjacent pair has a merge. Symbols are
     vocabulary ids throughout, so the loop is integer-only.

Known differences from HF:
  * Literal special-token text ("<s>", "</s>", "<mask>", ...) in the input
    is tokenized as ordinary text. HF maps it to the special token, which
    lets user text forge segment boundaries.
  * Unicode versions: RE2 (ours) and Oniguruma (HF) classify `\\p{L}` and
    `\\p{N}` with different Unicode tables, so characters assigned or
    re-categorised in between may be split differently.
  * A byte whose stand-in character is not in the vocabulary becomes the
    unknown token (every released byte-level vocabulary has all 256).
"""

import json
from pathlib import Path

import tensorflow as tf
import tensorflow_text as tf_text

from tfbert.text.tokenizer import (Tokenizer, as_text_batch, as_word_batch,
                                   read_tokenizer_config)
from tfbert.utils.json_file import read_json

# Unicode White_Space (what Oniguruma's \s matches in HF's regex).
_WHITESPACE = (r"\t\n\x{0B}\x{0C}\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}"
               r"\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}")
_WHITESPACE_RUN = f"[{_WHITESPACE}]+"
# The GPT-2 pattern without its whitespace alternatives (handled by offsets).
_PRE_TOKEN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+"
              rf"| ?[^{_WHITESPACE}\p{{L}}\p{{N}}]+")
# Merge ranks are int32; "no merge" ranks after every real one.
_NO_MERGE = 2**31 - 1

_no_autograph = tf.autograph.experimental.do_not_convert


def bytes_to_unicode():
    """GPT-2's byte -> stand-in character table, a dict int -> str.

    Bytes that are printable Latin-1 characters (33-126, 161-172, 174-255)
    stand for themselves; the other 68 take U+0100, U+0101, ... in byte order.
    """
    printable = (list(range(33, 127)) + list(range(161, 173))
                 + list(range(174, 256)))
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class ByteBpeTokenizer(Tokenizer):
    """Byte-level BPE tokenizer (RoBERTa, GPT-2) with HF parity, as TF ops.

    Args:
      vocabulary: dict token (str) -> id (int), the contents of `vocab.json`.
      merges: list of merges in rank order, each `"a b"` or `("a", "b")`
        (the lines of `merges.txt` after its `#version` header).
      add_prefix_space: prefix a space to texts that do not start with one,
        so the first word is tokenized like any other (HF's option).
      bos_token, eos_token, pad_token, unk_token, mask_token: the special
        tokens; RoBERTa packs `<s> A </s></s> B </s>`.

    Example:
      >>> tokenizer = ByteBpeTokenizer.from_pretrained("path/to/roberta")
      >>> tokenizer.tokenize(["Hello world"])  # ids of "Hello", "Ġworld"
    """

    def __init__(self, vocabulary, merges, add_prefix_space=False,
                 bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                 unk_token="<unk>", mask_token="<mask>", name=None):
        super().__init__({str(t): int(i) for t, i in vocabulary.items()},
                         dict(bos=bos_token, eos=eos_token, pad=pad_token,
                              unk=unk_token, mask=mask_token), name=name)
        if len(self._tokens) != len(self._ids):
            raise ValueError("vocabulary maps two tokens to the same id")
        missing = [t for t in self.special_tokens.values()
                   if t not in self._ids]
        if missing:
            raise ValueError(f"vocabulary lacks special token(s) {missing}")
        self._lookup.merges = [_merge_pair(m, index) for index, m in
                               enumerate(merges)]
        self.add_prefix_space = bool(add_prefix_space)

        # Pair (a, b) of ids -> key a * V + b, with V above every id.
        self._key_base = max(self._ids.values()) + 1
        keys, ranks, merged = [], [], []
        for rank, (a, b) in enumerate(self._lookup.merges):
            for token in (a, b, a + b):
                if token not in self._ids:
                    raise ValueError(
                        f"merge {rank} ({a!r} {b!r}) uses {token!r}, which "
                        "is not in the vocabulary")
            key = self._ids[a] * self._key_base + self._ids[b]
            if key in keys:
                continue  # HF keeps the first (lowest) rank of a duplicate.
            keys.append(key)
            ranks.append(rank)
            merged.append(self._ids[a + b])
        keys = tf.constant(keys, tf.int64)
        self._merge_rank = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                keys, tf.constant(ranks, tf.int32)), _NO_MERGE)
        self._merge_result = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                keys, tf.constant(merged, tf.int64)), -1)
        stand_in = bytes_to_unicode()
        self._byte_ids = tf.constant(
            [self._ids.get(stand_in[b], self.unk_id) for b in range(256)],
            tf.int64)
        # Per id: bytes it stands for, and its leading / trailing spaces.
        tokens = self.vocabulary
        space = stand_in[ord(" ")]
        self._token_bytes = tf.constant([len(t) for t in tokens], tf.int64)
        self._leading_spaces = tf.constant(
            [len(t) - len(t.lstrip(space)) for t in tokens], tf.int64)
        self._trailing_spaces = tf.constant(
            [len(t) - len(t.rstrip(space)) for t in tokens], tf.int64)

    # -- vocabulary -------------------------------------------------------

    @property
    def bos_id(self):
        return self._ids[self.special_tokens["bos"]]

    @property
    def eos_id(self):
        return self._ids[self.special_tokens["eos"]]

    @property
    def cls_id(self):
        """RoBERTa's classification token is its <s> (HF `cls_token`)."""
        return self.bos_id

    @property
    def sep_id(self):
        """RoBERTa's separator is its </s> (HF `sep_token`)."""
        return self.eos_id

    # -- tokenization -----------------------------------------------------

    @_no_autograph
    def tokenize(self, texts):
        """Text to BPE ids, without special tokens.

        Args:
          texts: tf.string `[batch]` (or a python list / numpy array of str);
            a scalar string is allowed.

        Returns:
          int32 `tf.RaggedTensor` `[batch, (tokens)]` (`[tokens]` for a
          scalar).
        """
        texts, scalar = as_text_batch(texts)
        pieces = self._tokenize(texts, self.add_prefix_space)
        return pieces[0] if scalar else pieces

    @_no_autograph
    def tokenize_words(self, words):
        """Pre-split words (e.g. CoNLL tokens) to BPE ids per word.

        Each word is tokenized as its own text with a prefix space, like HF's
        `is_split_into_words=True` (which RoBERTa's HF tokenizer allows only
        with `add_prefix_space=True`); a word may still be split further by
        the pre-tokenizer ("U.S." gives pieces of " U", ".", "S", ".").

        Args:
          words: tf.string `tf.RaggedTensor` `[batch, (words)]` (or a list of
            lists of str).

        Returns:
          int32 `tf.RaggedTensor` `[batch, (words), (pieces)]`.
        """
        words = as_word_batch(words)
        return words.with_flat_values(
            self._tokenize(words.flat_values, add_prefix_space=True))

    @_no_autograph
    def tokenize_with_offsets(self, texts):
        """Like `tokenize`, plus each token's span in the original text.

        Spans are UTF-8 byte offsets, trimmed like HF's `trim_offsets`: a
        token's leading and trailing spaces ("Ġ") are left out (except the
        leading space of a text's first token with `add_prefix_space`, which
        is the added space: that span starts at 0). A token that starts or
        ends inside a multi-byte character (byte-level BPE can split one)
        gets the whole character, as in HF.

        Args:
          texts: as for `tokenize`.

        Returns:
          (ids, starts, ends): int32 ids and int64 byte offsets, each a
          `tf.RaggedTensor` `[batch, (tokens)]` (`[tokens]` for a scalar).
        """
        texts, scalar = as_text_batch(texts)
        outputs = self._tokenize(texts, self.add_prefix_space,
                                 with_offsets=True)
        return tuple(x[0] for x in outputs) if scalar else outputs

    @_no_autograph
    def split_words_with_offsets(self, texts):
        """The words HF's pre-tokenizer sees (its `word_ids()`): the GPT-2
        pre-tokens, each without the space it carries (as HF's trimmed
        offsets), whitespace-only pre-tokens left out.

        Args:
          texts: tf.string `[batch]` (or a python list / numpy array of str).

        Returns:
          `(words, starts, ends)`, ragged `[batch, (words)]`: the words as
          tf.string and their int64 byte spans in the original strings.
        """
        texts, _ = as_text_batch(texts)
        words, starts = self._pre_tokenize(texts)
        flat = words.flat_values
        spaced = tf.strings.regex_full_match(flat, "(?s: .+)")
        flat = tf.where(spaced, tf.strings.substr(flat, 1, -1), flat)
        starts += tf.cast(spaced, tf.int64)
        ends = starts + tf.cast(tf.strings.length(flat), tf.int64)
        keep = words.with_flat_values(
            ~tf.strings.regex_full_match(flat, _WHITESPACE_RUN))
        return tuple(tf.ragged.boolean_mask(words.with_flat_values(x), keep)
                     for x in (flat, starts, ends))

    def _tokenize(self, texts, add_prefix_space, with_offsets=False):
        """[batch] texts -> int32 ragged [batch, (tokens)] (and int64 byte
        starts and ends with the same row splits if `with_offsets`)."""
        prefixed = tf.zeros_like(texts, tf.bool)
        if add_prefix_space:
            # HF leaves empty texts empty.
            prefixed = ~tf.strings.regex_full_match(texts, "(?s:| .*)")
            texts = tf.where(prefixed, tf.strings.join([" ", texts]), texts)
        words, word_starts = self._pre_tokenize(texts)
        # Each distinct pre-token is merged once per call.
        unique_words, word_index = tf.unique(words.flat_values)
        symbols = tf.strings.bytes_split(unique_words)
        byte_values = tf.io.decode_raw(symbols.flat_values, tf.uint8)
        ids = symbols.with_flat_values(tf.gather(
            self._byte_ids, tf.cast(tf.reshape(byte_values, [-1]), tf.int32)))
        pieces = tf.gather(self._merge(ids), word_index)  # [words, (pieces)]
        ids = tf.RaggedTensor.from_row_splits(
            tf.cast(pieces.flat_values, tf.int32),
            tf.gather(pieces.row_splits, words.row_splits), validate=False)
        if not with_offsets:
            return ids
        starts, ends = self._piece_spans(pieces, word_starts,
                                         add_prefix_space)
        starts, ends = _widen_to_characters(texts, ids.value_rowids(),
                                            starts, ends)
        # The added space is not in the original text.
        shift = tf.cast(tf.gather(prefixed, ids.value_rowids()), tf.int64)
        starts = tf.maximum(starts - shift, 0)
        ends = tf.maximum(ends - shift, 0)
        return (ids, ids.with_flat_values(starts), ids.with_flat_values(ends))

    def _piece_spans(self, pieces, word_starts, add_prefix_space):
        """Trimmed byte spans (flat int64) of the pieces [words, (pieces)]
        of words starting at `word_starts`."""
        ids = pieces.flat_values
        lengths = tf.gather(self._token_bytes, ids)
        before = tf.cumsum(lengths, exclusive=True)
        word_first = tf.gather(tf.concat([before, [0]], axis=0),
                               pieces.row_starts())
        rows = pieces.value_rowids()
        starts = (tf.gather(word_starts, rows) + before
                  - tf.gather(word_first, rows))
        ends = starts + lengths
        leading = tf.gather(self._leading_spaces, ids)
        trailing = tf.gather(self._trailing_spaces, ids)
        trim_leading = leading > 0
        if add_prefix_space:
            trim_leading &= starts > 0
        starts = tf.where(trim_leading, tf.minimum(starts + leading, ends),
                          starts)
        ends = tf.where((trailing > 0) & (ends >= trailing),
                        tf.maximum(ends - trailing, starts), ends)
        return starts, ends

    @_no_autograph
    def pre_tokenize(self, texts):
        """Texts `[batch]` -> pre-tokens (raw UTF-8), tf.string ragged
        `[batch, (words)]`, exactly as HF's ByteLevel pre-tokenizer splits
        (no prefix space is added here)."""
        texts, _ = as_text_batch(texts)
        return self._pre_tokenize(texts)[0]

    def _pre_tokenize(self, texts):
        """Pre-tokens ragged [batch, (words)] and their flat int64 byte
        starts."""
        # RegexSplitWithOffsets stops at a NUL byte. U+0001 is in the same
        # regex classes; the pre-tokens are cut from the original texts.
        searchable = tf.strings.regex_replace(texts, r"\x00", "\x01")
        runs, starts, ends = tf_text.regex_split_with_offsets(
            searchable, _WHITESPACE_RUN, _WHITESPACE_RUN)
        rows = runs.value_rowids()
        runs, starts, ends = (runs.flat_values, starts.flat_values,
                              ends.flat_values)
        count = tf.size(rows)
        # Runs alternate between whitespace and other text within a row.
        followed = tf.concat([tf.equal(rows[1:], rows[:-1]), [False]],
                             axis=0)[:count]
        split_run = tf.strings.regex_full_match(runs, _WHITESPACE_RUN) & (
            followed)
        last_char = tf.strings.substr(runs, -1, 1, unit="UTF8_CHAR")
        cut = ends - tf.cast(split_run, tf.int64) * tf.cast(
            tf.strings.length(last_char), tf.int64)
        gives_space = split_run & tf.equal(last_char, " ")
        gets_space = tf.concat([[False], gives_space[:-1]], axis=0)[:count]
        # Each run yields up to two spans: [start, cut), where a text run
        # starts one byte early if it takes the preceding space, and, for a
        # split whitespace run whose last character is not a space,
        # [cut, end).
        first_start = starts - tf.cast(gets_space, tf.int64)
        valid = tf.stack([cut > first_start, split_run & ~gives_space],
                         axis=1)
        span_starts = tf.boolean_mask(tf.stack([first_start, cut], axis=1),
                                      valid)
        span_ends = tf.boolean_mask(tf.stack([cut, ends], axis=1), valid)
        span_rows = tf.boolean_mask(tf.stack([rows, rows], axis=1), valid)

        span_text = tf.strings.substr(tf.gather(searchable, span_rows),
                                      span_starts, span_ends - span_starts)
        _, word_starts, word_ends = tf_text.regex_split_with_offsets(
            span_text, _PRE_TOKEN, _PRE_TOKEN)
        word_spans = word_starts.value_rowids()
        word_rows = tf.gather(span_rows, word_spans)
        word_lengths = word_ends.flat_values - word_starts.flat_values
        word_starts = (tf.gather(span_starts, word_spans)
                       + word_starts.flat_values)
        words = tf.strings.substr(tf.gather(texts, word_rows), word_starts,
                                  word_lengths)
        words = tf.RaggedTensor.from_value_rowids(
            words, word_rows, nrows=tf.shape(texts, out_type=tf.int64)[0])
        return words, word_starts

    def _merge(self, ids):
        """Applies the merges to int64 ragged `[words, (symbols)]`."""
        def body(values, row_splits, _):
            rows = tf.ragged.row_splits_to_segment_ids(row_splits)
            same_word = tf.equal(rows[1:], rows[:-1])
            keys = values[:-1] * self._key_base + values[1:]
            ranks = tf.where(same_word, self._merge_rank.lookup(keys),
                             _NO_MERGE)
            ranks = tf.concat([ranks, [_NO_MERGE]], axis=0)
            num_words = tf.size(row_splits) - 1
            best = tf.math.unsorted_segment_min(ranks, rows, num_words)
            chosen = (ranks < _NO_MERGE) & tf.equal(ranks,
                                                    tf.gather(best, rows))
            # In a run "a a a" of one pair, merge only its leftmost pair now.
            previous = tf.concat([[False], chosen[:-1]], axis=0)
            chosen &= ~previous
            merged = self._merge_result.lookup(
                tf.concat([keys, [0]], axis=0))
            values = tf.where(chosen, merged, values)
            consumed = tf.concat([[False], chosen[:-1]], axis=0)
            values = tf.boolean_mask(values, ~consumed)
            removed = tf.math.unsorted_segment_sum(
                tf.cast(chosen, tf.int64), rows, num_words)
            lengths = row_splits[1:] - row_splits[:-1] - removed
            row_splits = tf.concat([[0], tf.cumsum(lengths)], axis=0)
            return values, row_splits, tf.reduce_any(chosen)

        values, row_splits, _ = tf.while_loop(
            lambda values, row_splits, changed: changed, body,
            (ids.flat_values, ids.row_splits, tf.constant(True)),
            shape_invariants=(tf.TensorShape([None]), tf.TensorShape([None]),
                              tf.TensorShape([])))
        return tf.RaggedTensor.from_row_splits(values, row_splits,
                                               validate=False)

    # -- saving and loading -----------------------------------------------

    def continues_word(self, token):
        return not token.startswith(bytes_to_unicode()[ord(" ")])

    def save_pretrained(self, directory):
        """Writes `vocab.json`, `merges.txt` and an HF
        `tokenizer_config.json` (what `RobertaTokenizerFast` and
        `from_pretrained` read)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / "vocab.json", "w", encoding="utf-8") as f:
            json.dump(dict(self._ids), f, ensure_ascii=False)
        with open(directory / "merges.txt", "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
            f.writelines(f"{a} {b}\n" for a, b in self._lookup.merges)
        self._write_tokenizer_config(directory, "RobertaTokenizer", {
            "add_prefix_space": self.add_prefix_space})

    def get_config(self):
        """Constructor arguments (vocabulary and merges as plain lists)."""
        return {
            "vocabulary": dict(self._ids),
            "merges": [f"{a} {b}" for a, b in self._lookup.merges],
            "add_prefix_space": self.add_prefix_space,
            **self._special_token_arguments(),
        }

    @classmethod
    def from_pretrained(cls, directory, **kwargs):
        """Loads `vocab.json` + `merges.txt` (or `tokenizer.json`) and
        `add_prefix_space` / special tokens from `tokenizer_config.json`.

        Args:
          directory: an HF RoBERTa (or GPT-2) checkpoint directory.
          **kwargs: constructor arguments that override what is read.
        """
        directory = Path(directory)
        settings = read_tokenizer_config(
            directory, {"add_prefix_space": "add_prefix_space"},
            roles=("bos", "eos", "pad", "unk", "mask"))
        vocab_path = directory / "vocab.json"
        merges_path = directory / "merges.txt"
        if vocab_path.is_file() and merges_path.is_file():
            vocabulary = read_json(vocab_path)
            merges = _read_merges(merges_path)
        elif (directory / "tokenizer.json").is_file():
            model = read_json(directory / "tokenizer.json").get("model", {})
            if model.get("type") != "BPE":
                raise ValueError(f"{directory / 'tokenizer.json'}: model type "
                                 f"{model.get('type')!r} is not BPE")
            vocabulary, merges = model["vocab"], model["merges"]
        else:
            raise FileNotFoundError(
                f"no byte-level BPE vocabulary in {directory}: expected "
                "vocab.json and merges.txt, or tokenizer.json")
        settings.update(kwargs)
        return cls(vocabulary, merges, **settings)


def _widen_to_characters(texts, rows, starts, ends):
    """Byte spans (flat int64; token i in text rows[i]) widened to whole
    UTF-8 characters of `texts`."""
    _, char_starts = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")
    lengths = tf.cast(tf.strings.length(texts), tf.int64)
    text_offsets = tf.cumsum(lengths, exclusive=True)
    # Every character boundary of all texts, on one byte axis.
    boundaries = tf.sort(tf.concat([
        char_starts.flat_values
        + tf.gather(text_offsets, char_starts.value_rowids()),
        text_offsets + lengths], axis=0))
    offset = tf.gather(text_offsets, rows)
    down = tf.searchsorted(boundaries, starts + offset, side="right") - 1
    up = tf.searchsorted(boundaries, ends + offset, side="left")
    return (tf.gather(boundaries, down) - offset,
            tf.gather(boundaries, up) - offset)


def _merge_pair(merge, index):
    if isinstance(merge, str):
        parts = merge.split(" ")
    else:
        parts = list(merge)
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"merge {index} must be two tokens separated by one "
                         f"space, got {merge!r}")
    return tuple(parts)


def _read_merges(path):
    merges = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            if (number == 1 and line.startswith("#version")) or not line:
                continue
            parts = line.split(" ")
            if len(parts) != 2 or not all(parts):
                raise ValueError(
                    f"{path}, line {number}: a merge must be two tokens "
                    f"separated by one space, got {line!r}")
            merges.append(tuple(parts))
    return merges
