"""`EncoderInference`: a `BertEncoder`'s forward pass as TensorFlow serving
runs it, from the encoder's own weights."""

import keras
import tensorflow as tf

from tfbert.inference.token_packing import (TokenPacking, padded_to,
                                            trailing_padding_removed)
from tfbert.inference.transformer_block import transformer_block


class EncoderInference:
    """The outputs of `encoder(inputs, training=False)`, computed as exports
    do: padding columns after the batch's last real token are cut off
    (`trailing_padding_removed`), the blocks' position-wise layers run on
    real tokens only (`TokenPacking`), their matmuls in the forms
    TensorFlow fuses (`tfbert.inference.transformer_block`), and with
    `first_token_only` the last block for the first position only (a
    sequence classifier reads nothing else of the last layer, so a 6-layer
    model does about a seventh less work). The values of the Keras forward
    up to float rounding. For TensorFlow graphs and eager code (the
    packing's size depends on the mask), not XLA.

    Nothing is copied: every call reads the encoder's variables (or what a
    `keras.StatelessScope` maps them to).

    Args:
      encoder: a built `BertEncoder` of any family.
      feed_forward_shards: optional dict block -> its feed-forward column
        shards (`tfbert.inference.feed_forward_shards`): those blocks
        compute their feed-forward layer from the shards.
    """

    def __init__(self, encoder, feed_forward_shards=None):
        self.encoder = encoder
        self.feed_forward_shards = feed_forward_shards or {}

    def __call__(self, inputs, first_token_only=False, all_blocks=False,
                 pack=True):
        """The encoder's outputs for `inputs`.

        Args:
          inputs: dict of int32 [batch, seq] `input_word_ids`, `input_mask`,
            `input_type_ids` (checked as the encoder checks them).
          first_token_only: compute the last block for position 0 only.
          all_blocks: also return every block's output.
          pack: cut trailing padding and pack the tokens (data-dependent
            shapes); False runs every position of `inputs` (static
            shapes, for XLA: padding positions then hold values, not
            zeros).

        Returns:
          A dict with `sequence_output` float32 [batch, seq, H] (padding
          positions hold zeros; [batch, 1, H] with `first_token_only`),
          with a pooler `pooled_output` float32 [batch, H], and with
          `all_blocks` `encoder_outputs`, one [batch, seq, H] per block.
        """
        encoder = self.encoder
        # Name scopes (graphs only, no ops) mark the stages that
        # `benchmarks.serving_graphs --op_counts` counts.
        with tf.name_scope("packing"):
            inputs = encoder.checked_inputs(inputs)
            seq = keras.ops.shape(inputs["input_mask"])[1]
            packing = None
            if pack:
                inputs = trailing_padding_removed(inputs)
                packing = TokenPacking(inputs["input_mask"])
            mask = inputs["input_mask"]
        hidden = encoder.embeddings(
            inputs["input_word_ids"], inputs["input_type_ids"],
            training=False)
        if pack:
            with tf.name_scope("packing"):
                hidden = packing.pack(hidden)
        if encoder.embedding_projection is not None:
            hidden = encoder.embedding_projection(hidden)
        blocks = []
        num_layers = encoder.config.num_layers
        for i in range(num_layers):
            block = encoder.block(i)
            with tf.name_scope(f"block_{i}"):
                hidden = transformer_block(
                    block, hidden, mask, packing=packing,
                    first_token_only=first_token_only and i == num_layers - 1,
                    shards=self.feed_forward_shards.get(block))
            blocks.append(hidden)
        if first_token_only:
            outputs = {"sequence_output": hidden}
        else:
            if not all_blocks:
                blocks = blocks[-1:]
            if pack:
                with tf.name_scope("packing"):
                    blocks = [padded_to(packing.unpack(block), seq)
                              for block in blocks]
            outputs = {"sequence_output": blocks[-1]}
            if all_blocks:
                outputs["encoder_outputs"] = blocks
        if encoder.pooler is not None:
            outputs["pooled_output"] = encoder.pooler(
                outputs["sequence_output"])
        return outputs


def task_outputs(model, inputs, feed_forward_shards=None, encoder=None):
    """`model(inputs, training=False)` of a task model computed on
    `EncoderInference`, through the model's own head (`head_outputs`).

    Args:
      model: a task model (`SequenceClassifier`, `SpanLabeler`,
        `TokenClassifier`, `MultipleChoiceClassifier`, `SentenceEncoder`).
      inputs: its token-id inputs: the encoder's input dict (a
        `MultipleChoiceClassifier`'s [batch, choices, seq] dict; a
        `SentenceEncoder`'s preprocessed texts).
      feed_forward_shards: see `EncoderInference`.
      encoder: what computes the encoder's outputs, called as
        `EncoderInference` is (e.g. a `CompiledEncoder`); default
        `EncoderInference(model.encoder, feed_forward_shards)`.

    Returns:
      What the model's head returns (see each model).
    """
    if encoder is None:
        encoder = EncoderInference(model.encoder, feed_forward_shards)
    outputs = encoder(model.encoder_inputs(inputs),
                      first_token_only=model.first_token_head)
    with tf.name_scope("head"):
        return model.head_outputs(outputs, inputs, training=False)
