"""`MaskFiller`: masked-token prediction (fill-mask) with a pretrainer of any
family.

The text holds the family's mask token (`[MASK]` for BERT, DistilBERT,
ELECTRA's generator and ALBERT; `<mask>` for RoBERTa); the masked-LM head
ranks the vocabulary at each mask. As in HF's fill-mask pipeline, the
probabilities are a softmax over the whole vocabulary, and the mask token
takes the whitespace before it when the checkpoint's tokenizer files declare
it so (`lstrip`, as roberta-base and albert-base-v2 do; byte-level BPE
otherwise keeps that space as a token of its own, WordPiece ignores it).
"""

import json
import re
from pathlib import Path

import tensorflow as tf

from tfbert.checkpoints import load_pretrainer
from tfbert.inference import EncoderInference
from tfbert.text import Preprocessor


def mask_takes_space(directory, mask_token):
    """Whether an HF checkpoint's tokenizer strips the whitespace before
    `mask_token` (its `lstrip`), read from `tokenizer.json` or
    `tokenizer_config.json`; True, HF's default for the families that
    declare it, when neither says."""
    directory = Path(directory)
    entries = []
    path = directory / "tokenizer.json"
    if path.is_file():
        entries += json.loads(path.read_text(encoding="utf-8")).get(
            "added_tokens", [])
    path = directory / "tokenizer_config.json"
    if path.is_file():
        config = json.loads(path.read_text(encoding="utf-8"))
        entries += list(config.get("added_tokens_decoder", {}).values())
        entries.append(config.get("mask_token"))
    for entry in entries:
        if isinstance(entry, dict) and entry.get("content") == mask_token:
            return bool(entry.get("lstrip", False))
    return True


class MaskFiller:
    """Predicts the tokens behind the mask tokens of texts.

    Args:
      pretrainer: a `BertPretrainer` (its masked-LM head is used).
      preprocessor: the family's preprocessor (`Preprocessor.from_pretrained`).
      strip_before_mask: drop the whitespace before each mask token
        (`mask_takes_space` of the checkpoint).

    Example:
    ```python
    filler = MaskFiller.from_pretrained("path/to/pretrained")
    filler.fill_mask(["The capital of France is [MASK]."], top_k=3)
    # [[[{"token": "paris", "token_id": 3000, "probability": 0.41}, ...]]]
    ```
    """

    def __init__(self, pretrainer, preprocessor, strip_before_mask=True):
        self.pretrainer = pretrainer
        self.strip_before_mask = bool(strip_before_mask)
        self.preprocessor = preprocessor
        tokenizer = preprocessor.tokenizer
        self.mask_token = tokenizer.special_tokens["mask"]
        self.mask_id = tokenizer.mask_id
        self._predict = {}

    @classmethod
    def from_pretrained(cls, name_or_path, seq_length=128):
        """The filler of a pretraining checkpoint of any family (e.g. what
        `tfbert-pretrain --export_dir` writes), with its masked-LM head;
        texts longer than `seq_length` tokens are truncated."""
        preprocessor = Preprocessor.from_pretrained(
            name_or_path, seq_length=seq_length, pad_to_seq_length=False)
        mask = preprocessor.tokenizer.special_tokens["mask"]
        strip = (mask_takes_space(name_or_path, mask)
                 if Path(name_or_path).is_dir() else True)
        return cls(load_pretrainer(name_or_path, strict=True), preprocessor,
                   strip_before_mask=strip)

    def tokenize(self, texts):
        """Text to ids with the mask token's id where the text spells it.

        Args:
          texts: tf.string [batch].

        Returns:
          int32 `tf.RaggedTensor` [batch, (tokens)], no special tokens but
          the masks.
        """
        mask = self.mask_token
        if self.strip_before_mask:
            texts = tf.strings.regex_replace(texts, r"\s*" + re.escape(mask),
                                             mask)
        pieces = tf.strings.split(texts, sep=mask)
        ids = tf.cast(self.preprocessor.tokenizer.tokenize(pieces.flat_values),
                      tf.int32)
        # A mask id after every piece but the last of its text.
        last = pieces.row_limits() - 1
        followed = tf.scatter_nd(
            tf.cast(last[:, None], tf.int32),
            tf.ones_like(last, tf.int32),
            [tf.cast(tf.size(pieces.flat_values), tf.int32)]) == 0
        masks = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(followed, tf.int32))],
                    tf.constant(self.mask_id, tf.int32)),
            tf.cast(followed, tf.int64))
        return pieces.with_flat_values(
            tf.concat([ids, masks], axis=1)).merge_dims(1, 2)

    def pack(self, texts):
        """Encoder inputs of texts: dict of int32 [batch, seq]."""
        return self.preprocessor.pack([self.tokenize(texts)])

    def predict(self, features, top_k, feed_forward_shards=None):
        """The `top_k` tokens at each mask of packed inputs.

        Args:
          features: dict of int32 [batch, seq] encoder inputs.
          top_k: int, tokens per mask.
          feed_forward_shards: see `tfbert.inference.EncoderInference`.

        Returns:
          `(token_ids, probabilities, num_masks)`: int32 and float32
          [batch, masks, top_k] (best first; `masks` the most masks of a
          text in the batch, later slots of a text with fewer hold id 0 and
          probability 0), and int32 [batch].
        """
        ids, mask = features["input_word_ids"], features["input_mask"]
        is_mask = (ids == self.mask_id) & (mask == 1)
        positions = tf.ragged.boolean_mask(
            tf.broadcast_to(tf.range(tf.shape(ids)[1]), tf.shape(ids)),
            is_mask)
        num_masks = tf.cast(positions.row_lengths(), tf.int32)
        sequence = EncoderInference(self.pretrainer.encoder,
                                    feed_forward_shards)(features)[
            "sequence_output"]
        logits = self.pretrainer.masked_lm_head(
            sequence, positions.to_tensor(0),
            self.pretrainer.encoder.embeddings.word_embeddings)
        probabilities, token_ids = tf.math.top_k(
            tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1), k=top_k)
        real = tf.sequence_mask(num_masks, tf.shape(logits)[1])[..., None]
        return (tf.where(real, token_ids, 0),
                tf.where(real, probabilities, 0.0), num_masks)

    def fill_mask(self, texts, top_k=5, batch_size=32):
        """The best `top_k` tokens at every mask of each text.

        Args:
          texts: a list of str, each with any number of mask tokens.
          top_k: tokens per mask (at most the vocabulary size).
          batch_size: texts per model call.

        Returns:
          One list per text, with one list per mask (in text order) of
          `top_k` dicts `{"token": str, "token_id": int, "probability":
          float}`, most probable first. A mask cut off by truncation is not
          predicted.
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("texts must be a list of texts, got a single "
                            "string; wrap it in a list")
        vocab_size = self.preprocessor.tokenizer.vocab_size
        if not 1 <= top_k <= vocab_size:
            raise ValueError(f"top_k must be in [1, {vocab_size}], got "
                             f"{top_k}")
        if top_k not in self._predict:
            self._predict[top_k] = tf.function(
                lambda t: self.predict(self.pack(t), top_k),
                input_signature=[tf.TensorSpec([None], tf.string)])
        texts = list(texts)
        tokenizer = self.preprocessor.tokenizer
        results = []
        for start in range(0, len(texts), batch_size):
            ids, probabilities, counts = (
                x.numpy() for x in self._predict[top_k](
                    tf.constant(texts[start:start + batch_size])))
            for row, count in enumerate(counts):
                results.append([[
                    {"token": tokenizer.id_to_token(i), "token_id": int(i),
                     "probability": float(p)}
                    for i, p in zip(ids[row, m], probabilities[row, m])]
                    for m in range(count)])
        return results
