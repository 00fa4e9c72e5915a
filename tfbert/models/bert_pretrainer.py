"""`BertPretrainer`: the encoder with masked-LM and next-sentence heads."""

import keras

from tfbert.layers import MaskedLMHead, NextSentenceHead
from tfbert.models.encoder_task_model import EncoderTaskModel


@keras.saving.register_keras_serializable(package="tfbert")
class BertPretrainer(EncoderTaskModel, keras.Model):
    """Masked-LM + next-sentence pretraining model.

    The masked-LM decoder is tied to the encoder's word-embedding variable:
    the model holds exactly one [vocab, H] table.

    Inputs: the encoder's input dict plus `masked_lm_positions`, int32
    [batch, num_predictions].

    Outputs: a dict with `masked_lm_logits` float32
    [batch, num_predictions, vocab] and `next_sentence_logits` float32
    [batch, 2] (0 = actual next segment, 1 = random).

    Args:
      encoder: a `BertEncoder`.
    """

    def __init__(self, encoder, **kwargs):
        super().__init__(**kwargs)
        config = encoder.config
        self.encoder = encoder
        self.masked_lm_head = MaskedLMHead(
            config.vocab_size, hidden_act=config.hidden_act,
            initializer_range=config.initializer_range,
            layer_norm_epsilon=config.layer_norm_epsilon,
            name="masked_lm_head")
        self.next_sentence_head = NextSentenceHead(
            initializer_range=config.initializer_range,
            name="next_sentence_head")
        hidden_size = config.hidden_size
        self.masked_lm_head.build((None, None, hidden_size))
        self.next_sentence_head.build((None, hidden_size))
        # Every variable exists now; nothing is left for a build() call (or a
        # build config in a `.keras` file) to create.
        self.built = True

    def call(self, inputs, training=None):
        outputs = self.encoder(
            {name: inputs[name] for name in self.encoder.input}, training=training)
        return {
            "masked_lm_logits": self.masked_lm_head(
                outputs["sequence_output"], inputs["masked_lm_positions"],
                self.encoder.embeddings.word_embeddings),
            "next_sentence_logits": self.next_sentence_head(
                outputs["pooled_output"]),
        }
