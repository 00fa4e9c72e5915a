"""Serving module for fill-mask (masked-token prediction)."""

import tensorflow as tf

from tfbert.export.serving_module import ServingModule


class FillMaskServingModule(ServingModule):
    """Raw text with mask tokens in, the best tokens at each mask out.

    Signatures (see `ServingModule` for names, input specs and checks):
      `serving_default`: `text` (string [batch]), each with any number of
        the family's mask token (`[MASK]`, RoBERTa's `<mask>`).
      `serve_token_ids`: the three int32 [batch, seq_length] encoder inputs,
        masks as the tokenizer's mask id.
    Both return `tokens` string [batch, masks, k], `probabilities` float32
    [batch, masks, k] (best first, a softmax over the vocabulary),
    `token_ids` int32 [batch, masks, k] and `num_masks` int32 [batch];
    `masks` is the most masks of a text in the batch, and a text's slots
    past its own `num_masks` hold "" and probability 0.

    Args:
      filler: a `tfbert.fill_mask.MaskFiller`; its preprocessor's
        `seq_length` is the token-id signature's sequence length.
      top_k: tokens per mask.
    """

    def __init__(self, filler, top_k=5):
        super().__init__(filler.pretrainer, filler.preprocessor.tokenizer,
                         filler.preprocessor.seq_length, ("text",))
        self._untracked.filler = filler
        self.top_k = int(top_k)
        self.vocabulary = tf.constant(filler.preprocessor.tokenizer.vocabulary)

    def _outputs(self, features):
        token_ids, probabilities, num_masks = self._untracked.filler.predict(
            features, self.top_k, self.feed_forward_shards)
        real = tf.sequence_mask(num_masks, tf.shape(token_ids)[1])[..., None]
        tokens = tf.where(real, tf.gather(self.vocabulary, token_ids), "")
        return {"tokens": tokens, "probabilities": probabilities,
                "token_ids": token_ids, "num_masks": num_masks}

    def text_outputs(self, text):
        return self._outputs(self._untracked.filler.pack(text))

    def token_id_outputs(self, features):
        return self._outputs(features)
