"""`Preprocessor`: raw text (one or two segments) to encoder inputs, for
every model family.

`Preprocessor.from_pretrained(directory)` returns the in-graph tokenizer and
packing of the checkpoint's family (its `tfbert.families` entry):

  * bert, distilbert, electra: `BertTokenizer` (WordPiece),
    `[CLS] A [SEP] B [SEP]`, type ids 1 on B and its [SEP].
  * albert: `SentencePieceTokenizer`, the same layout and type ids.
  * roberta: `ByteBpeTokenizer` (byte-level BPE), `<s> A </s></s> B </s>`,
    type ids all 0, padding with `<pad>` (id 1).

Every family is packed by the same code (`Preprocessor.pack`) from its
`PackingLayout`. The WordPiece families get a `BertPreprocessor`: the same
layer with a `BertTokenizer` and the BERT layout, saved under its own name
with its tokenizer's settings as flat config keys (as `.keras` files have
always stored it).
"""

import dataclasses
import inspect

import keras
import tensorflow as tf

from tfbert import families
from tfbert.text.bert_tokenizer import BertTokenizer
from tfbert.text.byte_bpe_tokenizer import ByteBpeTokenizer
from tfbert.text.packing_layout import BERT_LAYOUT, LAYOUTS, PackingLayout
from tfbert.text.sentencepiece_tokenizer import SentencePieceTokenizer

TRUNCATIONS = ("longest_first", "waterfall")
# Inputs passed as they are (symbolic ones build a model, e.g. a
# `TextClassifier`).
_TENSORS = (tf.Tensor, keras.KerasTensor)
# The tokenizers, by the class names the family registry and a saved
# `Preprocessor` use.
TOKENIZERS = {cls.__name__: cls for cls in (
    BertTokenizer, ByteBpeTokenizer, SentencePieceTokenizer)}


@keras.saving.register_keras_serializable(package="tfbert")
class Preprocessor(keras.layers.Layer):
    """Tokenizes, truncates and packs one or two segments for a family.

    Packing is `start A end` or `start A middle B end` (the layout's special
    tokens); `input_type_ids` are the layout's `second_type_id` on B and the
    `end` tokens after it, 0 elsewhere; `input_mask` is 1 on real tokens;
    padding uses the tokenizer's `pad_id`.

    Truncation (only core TF ops, so any TF Serving can run it), with a
    budget of `n = seq_length` minus the layout's special tokens:
      * `"longest_first"`: exactly HF `tokenizers`' LongestFirst. Nothing is
        cut if `len(A) + len(B) <= n`; if the shorter segment fits in half
        the budget it is kept and the longer one gets the rest; otherwise
        the shorter gets `n // 2` and the longer `n // 2 + n % 2` (on equal
        lengths B counts as the longer). This is the original BERT "pop
        from the longer segment" rule except when both segments are cut,
        `n` is odd and `len(A) <= len(B)`: original BERT then gives the odd
        token to A, HF (and we) to B.
      * `"waterfall"`: A keeps up to `n` tokens, B gets what is left.
      A single segment is simply cut to `n`.

    Args:
      tokenizer: a tokenizer with `tokenize(texts)` -> int ragged
        `[batch, (tokens)]`, a `pad_id`, and an id for every role in
        `layout` (`BertTokenizer`, `ByteBpeTokenizer`,
        `SentencePieceTokenizer`).
      layout: the family's `PackingLayout`.
      seq_length: length of the packed sequences (at least the layout's
        special tokens for one segment).
      truncation: `"longest_first"` or `"waterfall"`.
      pad_to_seq_length: pad every batch to `seq_length`; if False, pad only
        to the longest packed sequence in the batch.
      **kwargs: `keras.layers.Layer` arguments.

    Call it on tf.string `[batch]` (or a python list / numpy array of str),
    or a tuple of one or two of them (the segments of each example). It
    returns a dict of int32 `[batch, seq_length]` tensors (`[batch,
    longest]` without `pad_to_seq_length`): `input_word_ids`, `input_mask`,
    `input_type_ids`.

    Example:
      >>> pre = Preprocessor.from_pretrained("path/to/roberta", seq_length=8)
      >>> pre((tf.constant(["How old are you?"]), tf.constant(["Six."])))
    """

    def __init__(self, tokenizer, layout, seq_length=128,
                 truncation="longest_first", pad_to_seq_length=True,
                 **kwargs):
        super().__init__(**kwargs)
        if truncation not in TRUNCATIONS:
            raise ValueError(
                f"truncation must be one of {TRUNCATIONS}, got {truncation!r}")
        if int(seq_length) < layout.num_special_tokens(1):
            raise ValueError(
                f"seq_length must be >= {layout.num_special_tokens(1)} (the "
                f"special tokens), got {seq_length}")
        self.tokenizer = tokenizer
        self.layout = layout
        self.seq_length = int(seq_length)
        self.truncation = truncation
        self.pad_to_seq_length = bool(pad_to_seq_length)
        self.built = True

    def __call__(self, inputs, *args, **kwargs):
        # Keras only takes tensors positionally, and a python list of str is
        # one segment (a batch of texts), not a list of segments.
        if isinstance(inputs, (list, tuple)) and all(
                isinstance(x, (str, bytes)) for x in inputs):
            inputs = tf.constant(list(inputs), tf.string)
        elif isinstance(inputs, (list, tuple)):
            inputs = tuple(x if isinstance(x, _TENSORS)
                           else tf.convert_to_tensor(x, tf.string)
                           for x in inputs)
        elif not isinstance(inputs, _TENSORS):
            inputs = tf.convert_to_tensor(inputs, tf.string)
        return super().__call__(inputs, *args, **kwargs)

    @tf.autograph.experimental.do_not_convert
    def call(self, inputs):
        """Packs raw text: `inputs` as in the class docstring; returns the
        packed dict."""
        segments = self._as_segments(inputs)
        return self.pack([self.tokenizer.tokenize(s) for s in segments])

    @tf.autograph.experimental.do_not_convert
    def pack(self, segments):
        """Truncates and packs already tokenized segments.

        Args:
          segments: list of 1 or 2 integer `tf.RaggedTensor`
            `[batch, (tokens)]` without special tokens.

        Returns:
          The same dict as `call`.
        """
        segments = [tf.cast(s, tf.int32) for s in self._as_segments(segments)]
        for s in segments:
            if s.ragged_rank != 1:
                raise ValueError("segments must be [batch, (tokens)] ragged "
                                 f"tensors, got ragged rank {s.ragged_rank}")
        num_special = self.layout.num_special_tokens(len(segments))
        budget = self.seq_length - num_special
        if budget < 0:
            raise ValueError(
                f"seq_length {self.seq_length} is too short for "
                f"{len(segments)} segments: packing needs {num_special} "
                "special tokens")
        lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
        keep = truncated_lengths(lengths, budget, self.truncation)
        packed_length = num_special + tf.add_n(keep)  # [batch]
        if self.pad_to_seq_length:
            width = self.seq_length
        else:
            # Never narrower than the special tokens, so an empty batch is
            # [0, special tokens] and slicing [:, 0] (the pooler) stays valid.
            width = tf.maximum(tf.reduce_max(packed_length), num_special)

        # A packed row is a run of pieces: the start tokens, A's kept tokens,
        # (the middle tokens, B's kept tokens,) the end tokens, padding.
        # Every id is gathered from one flat vector `values` (the layout's
        # special ids, `width` pad ids, each segment's tokens): position p of
        # piece k holds `values[p + offset[k]]`. Dense index arithmetic
        # instead of ragged concatenation and `to_tensor`: far fewer graph
        # ops, and the serving exports run this in their graphs.
        pair = len(segments) == 2
        start, middle, end = (self.layout.token_ids(self.tokenizer, part)
                              for part in ("start", "middle", "end"))
        middle = middle if pair else []
        pad_at = len(start) + len(middle) + len(end)
        values = tf.concat(
            [tf.constant(start + middle + end, tf.int32),
             tf.fill([width], tf.constant(self.tokenizer.pad_id, tf.int32))]
            + [s.values for s in segments], axis=0)
        first_token = pad_at + width
        token_starts = []
        for s in segments:
            token_starts.append(first_token
                                + tf.cast(s.row_starts(), tf.int32))
            first_token += tf.size(s.values)
        second = self.layout.second_type_id if pair else 0
        # (length, index in `values` of its first id, type id) per piece, a
        # python int where it is the same in every row, else int32 [batch].
        pieces = [(len(start), 0, 0), (keep[0], token_starts[0], 0)]
        if pair:
            pieces += [(len(middle), len(start), 0),
                       (keep[1], token_starts[1], second)]
        pieces += [(len(end), len(start) + len(middle), second),
                   (width - packed_length, pad_at, 0)]
        zeros = tf.zeros_like(packed_length)

        def by_piece(column):
            """int32 [batch, pieces], one of `pieces`' columns: its python
            ints as one constant row plus its tensors."""
            entries = [piece[column] for piece in pieces]
            return tf.constant([e if isinstance(e, int) else 0
                                for e in entries]) + tf.stack(
                [zeros if isinstance(e, int) else e for e in entries], axis=1)

        piece_lengths = by_piece(0)
        piece_ends = tf.cumsum(piece_lengths, axis=1)
        offsets = by_piece(1) - (piece_ends - piece_lengths)
        position = tf.tile(tf.range(width)[tf.newaxis], [tf.size(zeros), 1])
        piece = tf.searchsorted(piece_ends, position, side="right")
        outputs = {
            "input_word_ids": tf.gather(
                values, position + tf.gather(offsets, piece, batch_dims=1)),
            "input_mask": tf.cast(piece < len(pieces) - 1, tf.int32),
            "input_type_ids": tf.gather(
                tf.constant([t for _, _, t in pieces], tf.int32), piece),
        }
        if self.pad_to_seq_length:
            for tensor in outputs.values():
                tensor.set_shape([None, self.seq_length])
        return outputs

    def _as_segments(self, inputs):
        """`inputs` (one tensor or a tuple/list of 1 or 2) as a tuple."""
        if isinstance(inputs, dict):
            raise TypeError("inputs must be a tensor or a tuple/list of 1 or "
                            "2 tensors, not a dict")
        if not isinstance(inputs, (tuple, list)):
            inputs = (inputs,)
        if not 1 <= len(inputs) <= 2:
            raise ValueError(f"{type(self).__name__} takes 1 or 2 segments, "
                             f"got {len(inputs)}")
        return tuple(inputs)

    def get_config(self):
        config = super().get_config()
        config.update({
            "seq_length": self.seq_length,
            "truncation": self.truncation,
            "pad_to_seq_length": self.pad_to_seq_length,
            "tokenizer": {"class_name": type(self.tokenizer).__name__,
                          "config": self.tokenizer.get_config()},
            "layout": dataclasses.asdict(self.layout),
        })
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        tokenizer = config.pop("tokenizer")
        tokenizer_class = TOKENIZERS[tokenizer["class_name"]]
        layout = {k: tuple(v) if isinstance(v, list) else v
                  for k, v in config.pop("layout").items()}
        return cls(tokenizer_class.from_config(tokenizer["config"]),
                   PackingLayout(**layout), **config)

    @classmethod
    def from_pretrained(cls, name_or_path, seq_length=128, **kwargs):
        """The family's preprocessor for a preset or checkpoint directory.

        Args:
          name_or_path: a preset name, or a checkpoint directory (its
            `config.json` `model_type` names the family; a directory
            without one is BERT's).
          seq_length: packed length.
          **kwargs: `truncation`, `pad_to_seq_length` and Layer arguments go
            to the preprocessor; tokenizer arguments (e.g. `lowercase`,
            `add_prefix_space`, `keep_accents`) to the tokenizer.

        Returns:
          A `BertPreprocessor` for a WordPiece family (bert, distilbert,
          electra), otherwise a `Preprocessor` (roberta, albert).
        """
        family = families.family_of(name_or_path)
        tokenizer_class = TOKENIZERS[family.tokenizer]
        if tokenizer_class is BertTokenizer:
            return BertPreprocessor.from_pretrained(
                name_or_path, seq_length=seq_length, **kwargs)
        tokenizer = tokenizer_class.from_pretrained(
            name_or_path, **_tokenizer_arguments(tokenizer_class, kwargs))
        return cls(tokenizer, LAYOUTS[family.layout], seq_length=seq_length,
                   **kwargs)


@keras.saving.register_keras_serializable(package="tfbert")
class BertPreprocessor(Preprocessor):
    """The `Preprocessor` of the WordPiece families (BERT, DistilBERT,
    ELECTRA): a `BertTokenizer` and `[CLS] A [SEP] B [SEP]`, type ids 1 on B
    and the last [SEP], padding with id 0.

    It packs exactly as `Preprocessor(tokenizer, BERT_LAYOUT, ...)` does; its
    config holds the tokenizer's settings as flat keys (`vocabulary`,
    `lowercase`, `strip_accents`, ...), so `.keras` files that name it load
    as before.

    Args:
      tokenizer: a `BertTokenizer`.
      seq_length: length of the packed sequences (at least 2; pairs need 3).
      truncation: `"longest_first"` or `"waterfall"` (see `Preprocessor`).
      pad_to_seq_length: pad every batch to `seq_length`; if False, pad only
        to the longest packed sequence in the batch.
      **kwargs: `keras.layers.Layer` arguments.

    Example:
      >>> pre = BertPreprocessor.from_pretrained("minilm-l6-h384-uncased",
      ...                                        seq_length=8)
      >>> out = pre((tf.constant(["How old are you?"]), tf.constant(["Six."])))
      >>> out["input_word_ids"].numpy()  # "you ?" cut: A keeps 8 - 3 - 2
      array([[ 101, 2129, 2214, 2024,  102, 2416, 1012,  102]], dtype=int32)
      >>> out["input_type_ids"].numpy()
      array([[0, 0, 0, 0, 0, 1, 1, 1]], dtype=int32)
    """

    # Where the special tokens go, also before an instance exists.
    layout = BERT_LAYOUT

    def __init__(self, tokenizer, seq_length=128, truncation="longest_first",
                 pad_to_seq_length=True, **kwargs):
        if not isinstance(tokenizer, BertTokenizer):
            raise TypeError(
                f"tokenizer must be a BertTokenizer, got {type(tokenizer)}")
        super().__init__(tokenizer, BERT_LAYOUT, seq_length=seq_length,
                         truncation=truncation,
                         pad_to_seq_length=pad_to_seq_length, **kwargs)

    def get_config(self):
        config = super().get_config()
        del config["layout"]
        config.update(config.pop("tokenizer")["config"])
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        tokenizer = BertTokenizer.from_config(
            _tokenizer_arguments(BertTokenizer, config))
        return cls(tokenizer, **config)

    @classmethod
    def from_pretrained(cls, name_or_path, seq_length=128, **kwargs):
        """A preprocessor with the tokenizer of a preset or directory.

        Args:
          name_or_path: as for `BertTokenizer.from_pretrained`.
          seq_length: packed length.
          **kwargs: `truncation`, `pad_to_seq_length` and Layer arguments go
            to the preprocessor; tokenizer arguments (`lowercase`,
            `strip_accents`, ...) to the tokenizer.
        """
        tokenizer = BertTokenizer.from_pretrained(
            name_or_path, **_tokenizer_arguments(BertTokenizer, kwargs))
        return cls(tokenizer, seq_length=seq_length, **kwargs)


def _tokenizer_arguments(tokenizer_class, kwargs):
    """Removes the arguments of `tokenizer_class`'s constructor (but its
    `name`) from the dict `kwargs`; returns them as a dict."""
    names = set(inspect.signature(tokenizer_class.__init__).parameters)
    return {k: kwargs.pop(k) for k in list(kwargs)
            if k in names - {"self", "name"}}


def truncated_lengths(lengths, budget, truncation):
    """How many tokens of each segment are kept.

    Args:
      lengths: list of 1 or 2 int32 `[batch]`, the segments' lengths.
      budget: int, tokens available for all segments together.
      truncation: `"longest_first"` (HF `tokenizers`' LongestFirst) or
        `"waterfall"` (A first, B gets what is left); one segment is simply
        cut to `budget`.

    Returns:
      list of int32 `[batch]`, one per segment.
    """
    if len(lengths) == 1:
        return [tf.minimum(lengths[0], budget)]
    a, b = lengths
    if truncation == "waterfall":
        keep_a = tf.minimum(a, budget)
        return [keep_a, tf.minimum(b, budget - keep_a)]
    shorter = tf.minimum(a, b)
    fits = a + b <= budget
    shorter_kept = 2 * shorter <= budget
    keep_shorter = tf.where(shorter_kept, shorter, budget // 2)
    keep_longer = tf.where(shorter_kept, budget - shorter,
                           budget // 2 + budget % 2)
    # On equal lengths B takes the role of the longer segment (as in HF).
    a_longer = a > b
    keep_a = tf.where(fits, a, tf.where(a_longer, keep_longer, keep_shorter))
    keep_b = tf.where(fits, b, tf.where(a_longer, keep_shorter, keep_longer))
    return [keep_a, keep_b]
