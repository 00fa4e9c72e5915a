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

The tf-text ops it emits (`SentencepieceOp`, `SentencepieceTokenizeOp`) are
tf-text ops like the WordPiece ones, which TF Serving links with the rest of
tf-text; `tfbert.export.serving_ops` does not list them yet. A SavedModel
using them loads in any process that has imported `tensorflow_text`.

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

from tfbert.text.tokenizer import (Tokenizer, as_word_batch,
                                   read_tokenizer_config)

_no_autograph = tf.autograph.experimental.do_not_convert


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
