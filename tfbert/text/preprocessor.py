"""`Preprocessor`: raw text to encoder inputs for every model family.

`Preprocessor.from_pretrained(directory)` returns the in-graph tokenizer and
packing of the checkpoint's family (its `tfbert.families` entry):

  * bert, distilbert, electra: `BertTokenizer` (WordPiece),
    `[CLS] A [SEP] B [SEP]`, type ids 1 on B and its [SEP].
  * albert: `SentencePieceTokenizer`, the same layout and type ids.
  * roberta: `ByteBpeTokenizer` (byte-level BPE), `<s> A </s></s> B </s>`,
    type ids all 0, padding with `<pad>` (id 1).

The WordPiece families get a `BertPreprocessor`; the others a
`Preprocessor` layer. Both return the same dict of int32 `[batch, seq_length]`
tensors (`input_word_ids`, `input_mask`, `input_type_ids`) and truncate like
HF (`longest_first` by default), so every encoder takes either.
"""

import dataclasses
import inspect

import keras
import tensorflow as tf

from tfbert import families
from tfbert.text.bert_preprocessor import BertPreprocessor
from tfbert.text.bert_tokenizer import BertTokenizer
from tfbert.text.byte_bpe_tokenizer import ByteBpeTokenizer
from tfbert.text.packing_layout import LAYOUTS, PackingLayout
from tfbert.text.segment_preprocessor import (SegmentPreprocessor,
                                              truncated_lengths)
from tfbert.text.sentencepiece_tokenizer import SentencePieceTokenizer

# Inputs passed as they are (symbolic ones build a model, e.g. a
# `TextClassifier`).
_TENSORS = (tf.Tensor, keras.KerasTensor)
# The tokenizers, by the class names the family registry and a saved
# `Preprocessor` use.
TOKENIZERS = {cls.__name__: cls for cls in (
    BertTokenizer, ByteBpeTokenizer, SentencePieceTokenizer)}


@keras.saving.register_keras_serializable(package="tfbert")
class Preprocessor(SegmentPreprocessor):
    """Tokenizes, truncates and packs one or two segments for a family.

    Args:
      tokenizer: a tokenizer with `tokenize(texts)` -> int ragged
        `[batch, (tokens)]`, a `pad_id`, and an id for every role in
        `layout` (e.g. `ByteBpeTokenizer`, `SentencePieceTokenizer`).
      layout: the family's `PackingLayout`.
      seq_length: length of the packed sequences.
      truncation: `"longest_first"` (HF's) or `"waterfall"`, as in
        `BertPreprocessor`, with the budget `seq_length` minus the layout's
        special tokens.
      pad_to_seq_length: pad every batch to `seq_length`; if False, pad only
        to the longest packed sequence in the batch.

    Call it on tf.string `[batch]` (or a python list of str), or a tuple of
    one or two of them. It
    returns int32 `[batch, seq_length]` `input_word_ids`, `input_mask` (1 on
    real tokens) and `input_type_ids`; padding uses the tokenizer's `pad_id`.

    Example:
      >>> pre = Preprocessor.from_pretrained("path/to/roberta", seq_length=8)
      >>> pre((tf.constant(["How old are you?"]), tf.constant(["Six."])))
    """

    def __init__(self, tokenizer, layout, seq_length=128,
                 truncation="longest_first", pad_to_seq_length=True,
                 **kwargs):
        super().__init__(seq_length, truncation, pad_to_seq_length, **kwargs)
        if self.seq_length < layout.num_special_tokens(1):
            raise ValueError(
                f"seq_length must be >= {layout.num_special_tokens(1)} (the "
                f"special tokens), got {seq_length}")
        self.tokenizer = tokenizer
        self.layout = layout

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
    def pack(self, segments):
        """Truncates and packs already tokenized segments.

        Args:
          segments: list of 1 or 2 integer `tf.RaggedTensor`
            `[batch, (tokens)]` without special tokens.

        Returns:
          The same dict as `call`.
        """
        segments = [tf.cast(s, tf.int32)
                    for s in self._as_segments(segments)]
        budget = self._token_budget(
            len(segments), self.layout.num_special_tokens(len(segments)))
        lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
        keep = truncated_lengths(lengths, budget, self.truncation)
        batch = tf.shape(lengths[0])[0]

        def special(part):
            ids = self.layout.token_ids(self.tokenizer, part)
            return tf.RaggedTensor.from_tensor(
                tf.tile(tf.constant([ids], tf.int32), [batch, 1]))

        def truncated(segment, kept):
            positions = tf.ragged.range(tf.cast(segment.row_lengths(),
                                                tf.int32))
            return tf.ragged.boolean_mask(segment,
                                          positions < kept[:, tf.newaxis])

        parts = [(special("start"), 0),
                 (truncated(segments[0], keep[0]), 0)]
        if len(segments) == 2:
            parts += [(special("middle"), 0),
                      (truncated(segments[1], keep[1]),
                       self.layout.second_type_id)]
        parts.append((special("end"),
                      self.layout.second_type_id if len(segments) == 2
                      else 0))
        word_ids = tf.concat([p for p, _ in parts], axis=1)
        type_ids = tf.concat([tf.ones_like(p) * t for p, t in parts], axis=1)
        width = (self.seq_length if self.pad_to_seq_length
                 else tf.reduce_max(word_ids.row_lengths()))
        shape = tf.stack([tf.cast(batch, tf.int64),
                          tf.cast(width, tf.int64)])
        outputs = {
            "input_word_ids": word_ids.to_tensor(self.tokenizer.pad_id,
                                                 shape=shape),
            "input_mask": tf.ones_like(word_ids).to_tensor(0, shape=shape),
            "input_type_ids": type_ids.to_tensor(0, shape=shape),
        }
        return self._with_static_width(outputs)

    def get_config(self):
        config = super().get_config()
        config.update({
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
        layout = LAYOUTS[family.layout]
        tokenizer_args = set(inspect.signature(
            tokenizer_class.__init__).parameters) - {"self", "name"}
        tokenizer = tokenizer_class.from_pretrained(
            name_or_path, **{k: kwargs.pop(k) for k in list(kwargs)
                             if k in tokenizer_args})
        return cls(tokenizer, layout, seq_length=seq_length, **kwargs)

