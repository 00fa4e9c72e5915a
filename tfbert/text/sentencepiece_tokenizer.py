"""`SentencePieceTokenizer`: ALBERT's SentencePiece tokenizer, in the graph.

Reproduces HF's `AlbertTokenizer` (the `tokenizers` pipeline HF builds from
a checkpoint's `spiece.model`) with tensorflow-text's `SentencepieceTokenizer`
running the checkpoint's own model:

  1. "``" and "''" become '"' (ALBERT's LaTeX-style quotes).
  2. Unless `keep_accents`: NFKD, then every combining mark (`\\p{M}`) is
     deleted.
  3. If `lowercase`: lower-case character by character (a capital sigma
     always becomes "σ", never the word-final "ς", as in HF's Rust code).
  4. The SentencePiece model: its own normaliser (nmt_nfkc for ALBERT,
     including whitespace clean-up), the "▁" word-boundary marker and the
     unigram (or BPE) segmentation, all inside the tf-text op.

Offsets (`tokenize_with_offsets`) are those of HF's fast tokenizer: byte
spans in the original text, without the whitespace a "▁" stands for. The
op's spans (into the text after steps 1-3) are traced back through steps 1-3
character by character, like `BertTokenizer`'s: each original character is
normalised alone, and a quote pair "``" / "''" is aligned with its second
character, as HF aligns its replacement. A piece that is only "▁" spans
the first character after it, as in HF. Words (`split_words_with_offsets`,
HF's `word_ids()`) are the runs of characters between word boundaries:
whitespace, and what nmt_nfkc turns into whitespace or deletes.

The tf-text ops it emits (`SentencepieceOp`, `SentencepieceTokenizeOp`,
`SentencepieceTokenizeWithOffsetsOp`) are tf-text ops like the WordPiece
ones, which TF Serving links with the rest of tf-text
(`tfbert.export.serving_ops` lists them). A SavedModel using them loads in
any process that has imported `tensorflow_text`.

Known differences from HF:
  * Literal special-token text ("[CLS]", "[SEP]", "[MASK]", "<pad>", ...)
    in the input is tokenized as ordinary text; HF maps it to the special
    token, which lets user text forge segment boundaries.
  * Exact ties: when two segmentations of a word have the same total score
    (e.g. "000" as "00"+"0" or "0"+"00" when "000" is not a piece), the
    SentencePiece library (ours, and the original ALBERT's) and HF's Rust
    Unigram may pick different ones. Measured on a 4,000-piece model trained
    on Wikipedia: 8 of 129,761 GLUE/CoNLL/SQuAD texts.
"""

import base64
from pathlib import Path

import tensorflow as tf
import tensorflow_text as tf_text

from tfbert.text.tokenizer import (Tokenizer, as_text_batch, as_word_batch,
                                   read_tokenizer_config)

_no_autograph = tf.autograph.experimental.do_not_convert

# What nmt_nfkc (ALBERT's SentencePiece normaliser) turns into a word
# boundary, and what it deletes: found by running the SentencePiece library
# over every code point up to U+2FFFF.
_SPACE = (r"[\t\n\x{0C}\r \x{A0}\x{61C}\x{1680}\x{2000}-\x{200C}"
          r"\x{200E}\x{200F}\x{2028}\x{2029}\x{202F}\x{205F}\x{2581}"
          r"\x{3000}\x{FEFF}\x{FFFD}]")
_DELETED = r"[\x{00}-\x{08}\x{0B}\x{0E}-\x{1F}\x{7F}\x{8F}\x{9F}]"


class SentencePieceTokenizer(Tokenizer):
    """SentencePiece tokenizer with ALBERT's normalisation, as TF ops.

    Args:
      model: the serialized SentencePiece model (bytes, the contents of
        `spiece.model`) or its path.
      lowercase: lower-case the text (HF `do_lower_case`).
      keep_accents: keep combining marks (HF `keep_accents`); if False the
        text is NFKD-decomposed and the marks deleted.
      cls_token, sep_token, pad_token, unk_token, mask_token: the special
        pieces; ALBERT packs `[CLS] A [SEP] B [SEP]`.

    Example:
      >>> tokenizer = SentencePieceTokenizer.from_pretrained("path/to/albert")
      >>> tokenizer.tokenize(["Hello world"])  # ids of "▁hello", "▁world"
    """

    def __init__(self, model, lowercase=True, keep_accents=False,
                 cls_token="[CLS]", sep_token="[SEP]", pad_token="<pad>",
                 unk_token="<unk>", mask_token="[MASK]", name=None):
        if isinstance(model, (str, Path)):
            model = Path(model).read_bytes()
        model = bytes(model)
        sentencepiece, pieces = _load(model)
        super().__init__({piece: i for i, piece in enumerate(pieces)},
                         dict(cls=cls_token, sep=sep_token, pad=pad_token,
                              unk=unk_token, mask=mask_token), name=name)
        self._model = model
        self._sentencepiece = sentencepiece
        self.lowercase = bool(lowercase)
        self.keep_accents = bool(keep_accents)
        missing = [t for t in self.special_tokens.values()
                   if t not in self._ids]
        if missing:
            raise ValueError(
                f"SentencePiece model lacks special piece(s) {missing}")

    # -- tokenization -----------------------------------------------------

    @_no_autograph
    def tokenize(self, texts):
        """Text to SentencePiece ids, without special tokens.

        Args:
          texts: tf.string `[batch]` (or a python list / numpy array of str);
            a scalar string is allowed.

        Returns:
          int32 `tf.RaggedTensor` `[batch, (tokens)]` (`[tokens]` for a
          scalar).
        """
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        if texts.shape.rank not in (0, 1, None):
            raise ValueError(f"texts must be [batch] strings, got shape "
                             f"{texts.shape}")
        return self._sentencepiece.tokenize(self.normalize(texts))

    @_no_autograph
    def tokenize_words(self, words):
        """Pre-split words (e.g. CoNLL tokens) to SentencePiece ids per word.

        Each word is tokenized as its own text (so each starts with "▁"),
        like HF's `is_split_into_words=True`.

        Args:
          words: tf.string `tf.RaggedTensor` `[batch, (words)]` (or a list of
            lists of str).

        Returns:
          int32 `tf.RaggedTensor` `[batch, (words), (pieces)]`.
        """
        words = as_word_batch(words)
        return words.with_flat_values(self.tokenize(words.flat_values))

    @_no_autograph
    def tokenize_with_offsets(self, texts):
        """Like `tokenize`, plus each piece's span in the original text.

        Spans are UTF-8 byte offsets into the original strings, as HF's
        `offset_mapping` (module docstring): piece `i` of text `b` came from
        `texts[b][starts[b, i]:ends[b, i]]`. If normalising a text character
        by character ever disagrees in length with normalising it whole,
        every piece of that text spans the whole text.

        Args:
          texts: as for `tokenize`.

        Returns:
          (ids, starts, ends): int32 ids and int64 byte offsets, each a
          `tf.RaggedTensor` `[batch, (tokens)]` (`[tokens]` for a scalar).
        """
        texts, scalar = as_text_batch(texts)
        normalized = self.normalize(texts)
        ids, starts, ends = self._sentencepiece.tokenize_with_offsets(
            normalized)
        rows = ids.value_rowids()
        chars = self._characters(texts)
        text_bytes = tf.math.unsorted_segment_sum(
            chars["bytes"], chars["row"], tf.size(texts, tf.int64))
        exact = tf.equal(text_bytes, _byte_length(normalized))
        cum_bytes = tf.cumsum(chars["bytes"])
        base = tf.gather(tf.cumsum(text_bytes, exclusive=True), rows)
        max_char = tf.maximum(tf.size(cum_bytes, tf.int64) - 1, 0)
        first = tf.minimum(tf.searchsorted(
            cum_bytes, base + tf.cast(starts.flat_values, tf.int64),
            side="right", out_type=tf.int64), max_char)
        last = tf.minimum(tf.searchsorted(
            cum_bytes, base + tf.cast(ends.flat_values, tf.int64),
            side="left", out_type=tf.int64), max_char)

        # Leave out the spaces "▁" stands for and deleted characters at
        # either end; a piece with nothing else spans the character after
        # them (HF).
        visible = tf.where(chars["visible"])[:, 0]
        padded = tf.concat([[-1], visible, [max_char]], axis=0)
        trimmed = tf.gather(padded, 1 + tf.searchsorted(
            visible, first, side="left", out_type=tf.int64))
        first = tf.where(tf.equal(tf.gather(chars["row"], trimmed), rows),
                         trimmed, first)
        last = tf.maximum(first, tf.gather(padded, tf.searchsorted(
            visible, last, side="right", out_type=tf.int64)))
        piece_exact = tf.gather(exact, rows)
        start = tf.where(piece_exact, tf.gather(chars["start"], first), 0)
        end = tf.where(piece_exact, tf.gather(chars["end"], last),
                       tf.gather(_byte_length(texts), rows))
        outputs = (ids, ids.with_flat_values(start), ids.with_flat_values(end))
        return tuple(x[0] for x in outputs) if scalar else outputs

    @_no_autograph
    def split_words_with_offsets(self, texts):
        """The words HF's pre-tokenizer sees (its `word_ids()`): runs of
        non-space characters (module docstring), each spanning its first to
        its last visible character; words with none are left out.

        Args:
          texts: tf.string `[batch]` (or a python list / numpy array of str).

        Returns:
          `(words, starts, ends)`, ragged `[batch, (words)]`: the words as
          tf.string and their int64 byte spans in the original strings.
        """
        texts, _ = as_text_batch(texts)
        chars = self._characters(texts)
        row = chars["row"]
        previous_space = tf.concat([[True], chars["space"][:-1]], axis=0)
        new_text = tf.concat([[True], tf.not_equal(row[1:], row[:-1])],
                             axis=0)
        opens = ~chars["space"] & (previous_space | new_text)
        word = tf.cumsum(tf.cast(opens, tf.int64)) - 1
        visible = tf.where(chars["visible"])[:, 0]
        visible_word = tf.gather(word, visible)
        num_words = tf.reduce_sum(tf.cast(opens, tf.int64))
        # Words with a visible character, in order; their first and last.
        first = tf.math.unsorted_segment_min(visible, visible_word, num_words)
        last = tf.math.unsorted_segment_max(visible, visible_word, num_words)
        shown = tf.unique(visible_word)[0]
        first, last = tf.gather(first, shown), tf.gather(last, shown)
        starts = tf.gather(chars["start"], first)
        ends = tf.gather(chars["end"], last)
        word_rows = tf.gather(row, first)
        words = tf.strings.substr(tf.gather(texts, word_rows), starts,
                                  ends - starts)
        return tuple(tf.RaggedTensor.from_value_rowids(
            x, word_rows, nrows=tf.size(texts, tf.int64))
                     for x in (words, starts, ends))

    def _characters(self, texts):
        """Every character of `texts` [batch], flat over the batch: a dict of
        `row`, `start`, `end` (byte span), `bytes` (int64 length of its
        normalisation alone; 0 for the first of a quote pair, which HF
        aligns with the second), `space` (a word boundary) and `visible`
        (neither a boundary nor normalised away)."""
        marked = tf.strings.regex_replace(texts, "``|''", "\x01\"")
        marked_chars = tf.strings.unicode_split(marked, "UTF-8").flat_values
        chars, starts = tf.strings.unicode_split_with_offsets(texts, "UTF-8")
        flat = chars.flat_values
        pair_first = (tf.equal(marked_chars, "\x01")
                      & tf.not_equal(flat, "\x01"))
        char_bytes = tf.where(pair_first, tf.zeros_like(starts.flat_values),
                              _byte_length(self.normalize(marked_chars)))
        space = tf.strings.regex_full_match(flat, _SPACE)
        deleted = tf.strings.regex_full_match(flat, _DELETED)
        return {"row": chars.value_rowids(), "start": starts.flat_values,
                "end": starts.flat_values + _byte_length(flat),
                "bytes": char_bytes, "space": space,
                "visible": ~space & ~deleted & (char_bytes > 0)}

    @_no_autograph
    def normalize(self, texts):
        """ALBERT's normalisation before the SentencePiece model (steps 1-3
        above), tf.string of any shape."""
        texts = tf.strings.regex_replace(texts, "``|''", '"')
        if not self.keep_accents:
            texts = tf_text.normalize_utf8(texts, "NFKD")
            texts = tf.strings.regex_replace(texts, r"\p{M}", "")
        if self.lowercase:
            texts = tf.strings.regex_replace(texts, "\u03a3", "\u03c3")
            texts = tf.strings.lower(texts, encoding="utf-8")
        return texts

    # -- saving and loading -----------------------------------------------

    def continues_word(self, token):
        return not token.startswith("\u2581")

    def save_pretrained(self, directory):
        """Writes `spiece.model` and an HF `tokenizer_config.json` (what
        `AlbertTokenizer` and `from_pretrained` read)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "spiece.model").write_bytes(self._model)
        self._write_tokenizer_config(directory, "AlbertTokenizer", {
            "do_lower_case": self.lowercase,
            "keep_accents": self.keep_accents})

    def get_config(self):
        """Constructor arguments (the model as base64 text)."""
        return {
            "model": base64.b64encode(self._model).decode("ascii"),
            "lowercase": self.lowercase,
            "keep_accents": self.keep_accents,
            **self._special_token_arguments(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["model"] = base64.b64decode(config["model"])
        return cls(**config)

    @classmethod
    def from_pretrained(cls, directory, **kwargs):
        """Loads `spiece.model` and `do_lower_case` / `keep_accents` /
        special tokens from `tokenizer_config.json` (HF layout).

        Args:
          directory: an HF ALBERT checkpoint directory.
          **kwargs: constructor arguments that override what is read.
        """
        directory = Path(directory)
        model_path = directory / "spiece.model"
        if not model_path.is_file():
            raise FileNotFoundError(
                f"no SentencePiece model in {directory}: expected "
                "spiece.model")
        settings = read_tokenizer_config(
            directory, {"do_lower_case": "lowercase",
                        "keep_accents": "keep_accents"},
            roles=("cls", "sep", "pad", "unk", "mask"))
        settings.update(kwargs)
        return cls(model_path.read_bytes(), **settings)


def _byte_length(strings):
    """UTF-8 byte length of each string, int64 (same shape)."""
    return tf.cast(tf.strings.length(strings), tf.int64)


def _load(model):
    """The tf-text tokenizer of a serialized model and its pieces in id
    order; ValueError if `model` is not a SentencePiece model."""
    try:
        sentencepiece = tf_text.SentencepieceTokenizer(model=model,
                                                       out_type=tf.int32)
        size = int(sentencepiece.vocab_size())
        pieces = sentencepiece.id_to_string(tf.range(size)).numpy()
    except tf.errors.OpError as e:
        raise ValueError(f"not a SentencePiece model: {e.message}") from None
    return sentencepiece, [p.decode("utf-8") for p in pieces]
