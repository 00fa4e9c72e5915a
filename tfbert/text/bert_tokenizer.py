"""`BertTokenizer`: raw text to WordPiece ids, in the TensorFlow graph.

The tokenizer reproduces HF `tokenizers`' BERT pipeline (BertNormalizer with
clean_text, handle_chinese_chars, strip_accents and lowercase; BertPreTokenizer;
WordPiece with `##` continuations and a 100-*character* word limit), which is
what the released uncased/cased BERT checkpoints were trained with. It is
built from core TF string ops plus only those tf-text ops every TF Serving
since 2.10 links (`NormalizeUTF8`, `RegexSplitWithOffsets`,
`FastWordpieceTokenizeWithOffsets`), so a SavedModel that tokenizes raw text
loads in any process that imports `tensorflow_text`. tf-text's own
`BertTokenizer` / `FastBertTokenizer` are not used: their normalisation (NFKC
case folding, control characters, byte-counted word limit) differs from BERT's.

How a text becomes words (all on the ORIGINAL string, so offsets stay exact):
  1. Split on whitespace (`\\t \\n \\r`, `\\p{Zs}`, U+2028, U+2029), dropped.
  2. Isolate punctuation (ASCII 33-47, 58-64, 91-96, 123-126 and `\\p{P}`) and
     CJK ideographs (the ranges HF pads with spaces; unlike the original
     BERT, not U+2B820-U+2B91F) as one-character words. With accent
     stripping, also the four characters whose NFD is punctuation (below).
  3. Control and format characters (`\\p{Cc}` other than tab/newline/CR,
     `\\p{Cf}`, `\\p{Co}`, U+FFFD) are not split points: BERT deletes them,
     which joins their neighbours ("foo\\u200bbar" is one word "foobar").
  4. Normalise each word: delete those characters; if `strip_accents`, NFD
     and delete `\\p{Mn}`; if `lowercase`, lower-case character by character
     (so a final capital sigma becomes "σ", not "ς", as in HF's Rust code).
     Words that become empty are dropped.
  5. WordPiece each word; a word of more than `max_chars_per_word` characters
     (counted after normalisation) becomes one [UNK].

Known differences from HF `tokenizers` (deliberate or unavoidable):
  * Literal special-token text such as "[CLS]" or "[SEP]" in the input is
    tokenized as ordinary text ("[", "cl", "##s", "]"), as the original BERT
    does. HF maps it to the special token, which lets user text forge segment
    boundaries; we do not allow that.
  * Unicode versions. We classify characters with TF's tables (RE2, ICU), HF
    with older ones. Tokenizing every code point (in "ab{c}cd {c}x {c}")
    with both gives identical ids and offsets except for 149 code points (568
    with accent stripping), all characters whose category changed or that
    were assigned after HF's tables: e.g. punctuation U+2E43-U+2E5D (we
    isolate it), nonspacing marks such as U+0898-U+089F and format
    characters such as U+0890 (we delete them), U+166D (So now, Po before).
  * Invalid UTF-8 input is not supported (HF cannot receive it at all).

Offsets (`tokenize_with_offsets`) are byte offsets into the original strings.
Each normalised character is traced back to the original character that
produced it, so a piece's span runs from the first to the last original
character behind it (deleted characters in between are included). A piece
that starts or ends inside the expansion of one original character (e.g. a
Hangul syllable decomposed into jamo by NFD) gets that whole character. If
per-character normalisation ever disagrees in length with normalising the
whole word, and for over-long words, every piece of the word gets the whole
word's span.
"""

import json
import os
from pathlib import Path

import tensorflow as tf
import tensorflow_text as tf_text

from tfbert.presets import get_preset
from tfbert.text.tokenizer import (Tokenizer, as_text_batch,
                                   read_tokenizer_config)
from tfbert.text.vocab import (
    SPECIAL_TOKENS, VOCABULARY_FILES, find_vocabulary, load_vocabulary,
    save_vocabulary)
from tfbert.utils.keras_file import (is_keras_file, load_keras_file,
                                     tokenizer_of)
from tfbert.utils.tf_hub import (is_hub_handle, is_hub_saved_model,
                                 load_saved_model, resolve_handle,
                                 tokenizer_settings)

_WHITESPACE = r"\t\n\r\p{Zs}\x{2028}\x{2029}"
# ASCII symbols count as punctuation for BERT even where Unicode says Sm/Sc/Sk.
_PUNCTUATION = r"\x{21}-\x{2F}\x{3A}-\x{40}\x{5B}-\x{60}\x{7B}-\x{7E}\p{P}"
# With accent stripping HF applies NFD to the whole text before splitting, so
# the characters whose decomposition minus combining marks is punctuation
# (GREEK VARIA -> "`", NOT EQUAL TO -> "=", NOT LESS-/GREATER-THAN -> "<"/">")
# are punctuation too; a scan of all code points finds no others.
_PUNCTUATION_AFTER_NFD = r"\x{1FEF}\x{2260}\x{226E}\x{226F}"
_CJK = (r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}"
        r"\x{2A700}-\x{2B73F}\x{2B740}-\x{2B81F}\x{2B920}-\x{2CEAF}"
        r"\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}")
_DELETED = (r"[\x{00}-\x{08}\x{0B}\x{0C}\x{0E}-\x{1F}\x{7F}-\x{9F}"
            r"\p{Cf}\p{Co}\p{Cs}\x{FFFD}]")

_TOKENIZER_CONFIG = "tokenizer_config.json"


class NoVocabularyError(FileNotFoundError, ValueError):
    """A preset or checkpoint directory has no vocabulary file."""

# The graph is fixed at trace time (no tensor-dependent Python control flow);
# letting AutoGraph rewrite these methods only costs seconds per trace.
_no_autograph = tf.autograph.experimental.do_not_convert


class BertTokenizer(Tokenizer):
    """WordPiece tokenizer with HF-identical BERT normalisation, as TF ops.

    Args:
      vocabulary: path of a `vocab.txt`, or the tokens as a list of str.
      lowercase: lower-case the text (uncased models).
      strip_accents: delete combining marks after NFD; `None` means the same
        as `lowercase` (HF semantics).
      tokenize_chinese_chars: make every CJK ideograph its own word.
      max_chars_per_word: longer words (in characters) become [UNK].

    Example:
      >>> tokenizer = BertTokenizer.from_pretrained("minilm-l6-h384-uncased")
      >>> tokenizer.tokenize(["Hello, world!"])
      <tf.RaggedTensor [[7592, 1010, 2088, 999]]>
    """

    def __init__(self, vocabulary, lowercase=True, strip_accents=None,
                 tokenize_chinese_chars=True, max_chars_per_word=100,
                 name=None):
        if isinstance(vocabulary, (str, os.PathLike)):
            tokens = load_vocabulary(vocabulary)
        else:
            tokens = [str(t) for t in vocabulary]
            if len(set(tokens)) != len(tokens):
                raise ValueError("vocabulary has duplicate tokens")
            missing = [t for t in SPECIAL_TOKENS if t not in tokens]
            if missing:
                raise ValueError(f"vocabulary lacks special token(s) {missing}")
        if max_chars_per_word < 1:
            raise ValueError(
                f"max_chars_per_word must be >= 1, got {max_chars_per_word}")
        super().__init__({t: i for i, t in enumerate(tokens)},
                         dict(pad="[PAD]", unk="[UNK]", cls="[CLS]",
                              sep="[SEP]", mask="[MASK]"), name=name)
        self.lowercase = bool(lowercase)
        self.strip_accents = (self.lowercase if strip_accents is None
                              else bool(strip_accents))
        self._strip_accents_arg = strip_accents
        self.tokenize_chinese_chars = bool(tokenize_chinese_chars)
        self.max_chars_per_word = int(max_chars_per_word)

        isolated = _PUNCTUATION
        if self.strip_accents:
            isolated += _PUNCTUATION_AFTER_NFD
        if self.tokenize_chinese_chars:
            isolated += _CJK
        self._split_pattern = f"[{_WHITESPACE}]|[{isolated}]"
        self._keep_pattern = f"[{isolated}]"
        # A normalised word of at most max_chars_per_word characters has at
        # most 4 bytes per character; longer ones are replaced by a word one
        # byte over the limit so that WordPiece itself emits a single [UNK].
        max_bytes = 4 * self.max_chars_per_word
        self._overlong_word = "x" * (max_bytes + 1)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=tokens, suffix_indicator="##", max_bytes_per_word=max_bytes,
            token_out_type=tf.int32, unknown_token="[UNK]",
            no_pretokenization=True)

    # -- tokenization -----------------------------------------------------

    @_no_autograph
    def tokenize(self, texts):
        """Text to WordPiece ids, without special tokens.

        Args:
          texts: tf.string `[batch]` (or a python list / numpy array of str);
            a scalar string is allowed.

        Returns:
          int32 `tf.RaggedTensor` `[batch, (tokens)]`, or an int32 tensor
          `[tokens]` for a scalar input.
        """
        texts, scalar = as_text_batch(texts)
        words, _, _ = self._split(texts)
        pieces, _, _ = self._wordpiece_words(self._normalize(words.flat_values))
        ids = words.with_flat_values(pieces).merge_dims(1, 2)
        return ids[0] if scalar else ids

    @_no_autograph
    def words(self, texts):
        """BERT's basic tokenization: the normalised words WordPiece sees.

        The result depends only on `lowercase`, `strip_accents` and
        `tokenize_chinese_chars`, not on the vocabulary.

        Args:
          texts: tf.string `[batch]` (or a python list / numpy array of str);
            a scalar string is allowed.

        Returns:
          tf.string `tf.RaggedTensor` `[batch, (words)]` (`[words]` for a
          scalar input); words that normalise to nothing are dropped.
        """
        texts, scalar = as_text_batch(texts)
        words, _, _ = self._split(texts)
        words = words.with_flat_values(self._normalize(words.flat_values))
        words = tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)
        return words[0] if scalar else words

    @_no_autograph
    def tokenize_with_offsets(self, texts):
        """Like `tokenize`, plus the byte span of every piece in the input.

        Args:
          texts: tf.string `[batch]` (or list / numpy array); or a scalar.

        Returns:
          `(ids, starts, ends)`: ids int32, starts and ends int64, all ragged
          `[batch, (tokens)]` (or `[tokens]` for a scalar input). `starts` and
          `ends` are byte offsets into the ORIGINAL strings: piece `i` of text
          `b` came from `texts[b][starts[b, i]:ends[b, i]]` (see the module
          docstring for how normalisation that changes lengths is handled).
        """
        texts, scalar = as_text_batch(texts)
        words, word_starts, word_ends = self._split(texts)
        original = words.flat_values
        normalized = self._normalize(original)
        pieces, piece_starts, piece_ends = self._wordpiece_words(
            normalized, with_offsets=True)
        word_of_piece = pieces.value_rowids()

        # Trace each normalised byte back to the original character behind
        # it: normalise character by character and lay all words' normalised
        # bytes end to end, so one sorted search serves the whole batch.
        chars, char_starts = tf.strings.unicode_split_with_offsets(
            original, "UTF-8")
        char_starts = char_starts.flat_values
        char_ends = char_starts + _byte_length(chars.flat_values)
        char_bytes = _byte_length(self._normalize(chars.flat_values))
        cum_bytes = tf.cumsum(char_bytes)
        word_bytes = tf.math.unsorted_segment_sum(
            char_bytes, chars.value_rowids(), tf.size(original, tf.int64))
        word_base = tf.cumsum(word_bytes, exclusive=True)
        exact = tf.equal(word_bytes, _byte_length(normalized))

        base = tf.gather(word_base, word_of_piece)
        first_char = tf.searchsorted(cum_bytes, base + piece_starts,
                                     side="right", out_type=tf.int64)
        last_char = tf.searchsorted(cum_bytes, base + piece_ends,
                                    side="left", out_type=tf.int64)
        # Searches can only run past the end for inexact words, whose spans
        # are replaced below; clamp so that the gathers stay valid.
        max_char = tf.maximum(tf.size(cum_bytes, tf.int64) - 1, 0)
        first_char = tf.minimum(first_char, max_char)
        last_char = tf.minimum(last_char, max_char)

        word_start = tf.gather(word_starts.flat_values, word_of_piece)
        word_end = tf.gather(word_ends.flat_values, word_of_piece)
        piece_exact = tf.gather(exact, word_of_piece)
        start = tf.where(piece_exact,
                         word_start + tf.gather(char_starts, first_char),
                         word_start)
        end = tf.where(piece_exact,
                       word_start + tf.gather(char_ends, last_char),
                       word_end)

        def per_text(flat):
            return words.with_flat_values(
                pieces.with_flat_values(flat)).merge_dims(1, 2)

        ids = per_text(pieces.flat_values)
        starts, ends = per_text(start), per_text(end)
        if scalar:
            return ids[0], starts[0], ends[0]
        return ids, starts, ends

    @_no_autograph
    def split_words_with_offsets(self, texts):
        """The pre-tokenizer's words (steps 1-3 of the module docstring),
        before normalisation: what `tokenize` cuts into WordPieces.

        Args:
          texts: tf.string `[batch]` (or a python list / numpy array of str).

        Returns:
          `(words, starts, ends)`, ragged `[batch, (words)]`: the words as
          tf.string and their int64 byte spans in the original strings
          (a NUL byte inside a word reads as U+0001).
        """
        texts, _ = as_text_batch(texts)
        return self._split(texts)

    @_no_autograph
    def tokenize_words(self, words):
        """Pre-split words (e.g. CoNLL tokens) to WordPiece ids per word.

        Each word is still split on whitespace and punctuation and normalised,
        like HF's `is_split_into_words=True`; a word that normalises to
        nothing gets no pieces.

        Args:
          words: tf.string `tf.RaggedTensor` `[batch, (words)]` (or a list of
            lists of str).

        Returns:
          int32 `tf.RaggedTensor` `[batch, (words), (pieces)]`.
        """
        if not isinstance(words, tf.RaggedTensor):
            # tf.ragged.constant is slow on long python lists.
            words = tf.RaggedTensor.from_row_lengths(
                tf.constant([w for row in words for w in row], tf.string),
                tf.constant([len(row) for row in words], tf.int64))
        if words.ragged_rank != 1:
            raise ValueError(
                f"words must be a [batch, (words)] RaggedTensor, got ragged "
                f"rank {words.ragged_rank}")
        return words.with_flat_values(self.tokenize(words.flat_values))

    @_no_autograph
    def detokenize(self, ids):
        """Ids back to text: pieces joined by spaces, `##` pieces merged.

        [PAD], [CLS], [SEP] and [MASK] are dropped; [UNK] is kept so that
        unknown words stay visible. Text is normalised (lower-cased, accents
        stripped) and punctuation stays space-separated: this is for reading,
        not an inverse of `tokenize`.

        Args:
          ids: integer ids, ragged `[batch, (tokens)]` or dense
            `[batch, seq_length]` (padding included), or `[tokens]`.

        Returns:
          tf.string `[batch]` (a scalar for `[tokens]` input).
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
            if ids.shape.rank == 1:
                return self.detokenize(ids[tf.newaxis])[0]
            ids = tf.RaggedTensor.from_tensor(ids)
        tokens = tf.gather(tf.constant(self.vocabulary), ids)
        dropped = tf.constant([self.pad_id, self.cls_id, self.sep_id,
                               self.mask_id], ids.dtype)
        keep = tf.reduce_all(
            tf.not_equal(ids[..., tf.newaxis], dropped), axis=-1)
        tokens = tf.ragged.boolean_mask(tokens, keep)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " ##", "")

    # -- saving and loading -----------------------------------------------

    def get_config(self):
        """Constructor arguments (the vocabulary as a list of str)."""
        return {
            "vocabulary": self.vocabulary,
            "lowercase": self.lowercase,
            "strip_accents": self._strip_accents_arg,
            "tokenize_chinese_chars": self.tokenize_chinese_chars,
            "max_chars_per_word": self.max_chars_per_word,
        }

    def continues_word(self, token):
        return token.startswith("##")

    def save_pretrained(self, directory):
        """Writes `vocab.txt` and an HF-style `tokenizer_config.json`."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        save_vocabulary(self.vocabulary, directory / "vocab.txt")
        self._write_tokenizer_config(directory, "BertTokenizer", {
            "do_lower_case": self.lowercase,
            "strip_accents": self._strip_accents_arg,
            "tokenize_chinese_chars": self.tokenize_chinese_chars})

    @classmethod
    def from_pretrained(cls, name_or_path, **kwargs):
        """Loads the tokenizer of a preset or a checkpoint directory.

        Args:
          name_or_path: a preset name (see `tfbert.presets`), or a directory
            with `vocab.txt` (HF, Google or `save_pretrained` layout),
            `assets/tokenizer/vocabulary.txt` (keras-hub preset), or a TF Hub
            BERT encoder SavedModel or handle (its `vocab_file` asset and
            `do_lower_case`), or a `.keras` file of a model that holds a
            tokenizer (`BertTextClassifier`).
          **kwargs: constructor arguments that override what is read.

        Settings come from `tokenizer_config.json` (HF keys `do_lower_case`,
        `strip_accents`, `tokenize_chinese_chars`) or a keras-hub
        `tokenizer.json` when present; otherwise the vocabulary decides:
        lower-case iff no token except bracketed specials changes when
        lower-cased (uncased vocabularies hold caseless capitals like "ℝ").
        """
        if is_keras_file(name_or_path):
            tokenizer = tokenizer_of(load_keras_file(name_or_path))
            if tokenizer is None:
                raise ValueError(f"{name_or_path}: the model holds no "
                                 "tokenizer; pass a vocab.txt")
            return cls.from_config({**tokenizer.get_config(), **kwargs})
        if is_hub_handle(name_or_path):
            name_or_path = resolve_handle(name_or_path)
        preset = (get_preset(name_or_path) if isinstance(name_or_path, str)
                  else None)
        if preset is not None:
            directory = preset.directory()
            if directory is None:
                raise NoVocabularyError(
                    f"preset {preset.name!r} has no vocabulary (it is a "
                    "random-init architecture); build BertTokenizer from a "
                    "vocab.txt instead")
        else:
            directory = Path(name_or_path)
            if not directory.is_dir():
                raise FileNotFoundError(
                    f"{name_or_path!r} is neither a preset name nor a "
                    "directory")
        settings = {}
        if is_hub_saved_model(directory):
            vocab_path, lowercase = tokenizer_settings(
                load_saved_model(directory))
            if lowercase is not None:
                settings["lowercase"] = lowercase
        else:
            vocab_path = find_vocabulary(directory)
        if vocab_path is None:
            raise NoVocabularyError(
                f"no vocabulary in {directory}: expected one of "
                f"{', '.join(VOCABULARY_FILES)}")
        tokens = load_vocabulary(vocab_path)
        settings.update(_read_settings(directory))
        if "lowercase" not in settings:
            settings["lowercase"] = not any(
                t != t.lower() for t in tokens
                if not (t.startswith("[") and t.endswith("]")))
        if preset is not None:
            settings["lowercase"] = preset.lowercase
        settings.update(kwargs)
        return cls(tokens, **settings)

    # -- internals ----------------------------------------------------------

    def _split(self, texts):
        """[batch] original texts -> words and byte offsets, ragged [b, (w)]."""
        # RegexSplitWithOffsets stops at a NUL byte; U+0001 is deleted the
        # same way and keeps every byte offset.
        texts = tf.strings.regex_replace(texts, r"\x00", "\x01")
        return tf_text.regex_split_with_offsets(
            texts, self._split_pattern, self._keep_pattern)

    def _normalize(self, strings):
        """Normalises a flat string tensor the BertNormalizer way."""
        strings = tf.strings.regex_replace(strings, _DELETED, "")
        if self.strip_accents:
            strings = tf_text.normalize_utf8(strings, "NFD")
            strings = tf.strings.regex_replace(strings, r"\p{Mn}", "")
        if self.lowercase:
            # ICU lower-cases a word-final capital sigma to "ς"; BERT
            # lower-cases character by character, always giving "σ".
            strings = tf.strings.regex_replace(strings, "\u03a3", "\u03c3")
            strings = tf.strings.lower(strings, encoding="utf-8")
        return strings

    def _wordpiece_words(self, words, with_offsets=False):
        """Normalised words [n] -> pieces int32 ragged [n, (pieces)].

        With offsets, also int64 byte spans within each normalised word; an
        over-long word's single [UNK] spans the whole word.
        """
        overlong = tf.strings.length(words, unit="UTF8_CHAR") > (
            self.max_chars_per_word)
        words_in = tf.where(overlong, self._overlong_word, words)
        if not with_offsets:
            return self._wordpiece.tokenize(words_in), None, None
        pieces, starts, ends = self._wordpiece.tokenize_with_offsets(words_in)
        rows = pieces.value_rowids()
        piece_overlong = tf.gather(overlong, rows)
        starts = tf.where(piece_overlong, tf.zeros_like(starts.flat_values),
                          tf.cast(starts.flat_values, tf.int64))
        ends = tf.where(piece_overlong,
                        tf.gather(_byte_length(words),
                                  rows),
                        tf.cast(ends.flat_values, tf.int64))
        return pieces, starts, ends


def _byte_length(strings):
    """UTF-8 byte length of each string, int64 (same shape)."""
    return tf.cast(tf.strings.length(strings), tf.int64)


def _read_settings(directory):
    """Tokenizer settings stored beside a vocabulary, as constructor kwargs."""
    settings = {}
    hf_config = directory / _TOKENIZER_CONFIG
    keras_hub_config = directory / "tokenizer.json"
    if hf_config.is_file():
        settings = read_tokenizer_config(
            directory, {"do_lower_case": "lowercase",
                        "strip_accents": "strip_accents",
                        "tokenize_chinese_chars": "tokenize_chinese_chars"})
    elif keras_hub_config.is_file():
        with open(keras_hub_config, encoding="utf-8") as f:
            config = json.load(f)
        # An HF tokenizer.json has no "config"; keras-hub's does.
        if "lowercase" in (config.get("config") or {}):
            settings["lowercase"] = config["config"]["lowercase"]
    return settings
