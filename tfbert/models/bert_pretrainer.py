"""`MaskedLMPretrainer` (formerly `BertPretrainer`): an encoder of any
family with its pretraining heads."""

import keras

from tfbert.layers import MaskedLMHead, NextSentenceHead
from tfbert.models.checkpoint_entry import checkpoints
from tfbert.models.encoder_task_model import EncoderTaskModel, loadable_as


@keras.saving.register_keras_serializable(package="tfbert")
class MaskedLMPretrainer(EncoderTaskModel, keras.Model):
    """Masked-LM pretraining model, with the family's sentence-pair head.

    The masked-LM decoder is tied to the encoder's word-embedding variable:
    the model holds exactly one [vocab, E] table. The encoder's
    `sentence_objective` decides the second head: BERT's next-sentence
    prediction, ALBERT's sentence-order prediction (the same two-way dense
    layer on `pooled_output`), or none (DistilBERT, RoBERTa, ELECTRA's
    generator: masked-LM only).

    Inputs: the encoder's input dict plus `masked_lm_positions`, int32
    [batch, num_predictions].

    Outputs: a dict with `masked_lm_logits` float32
    [batch, num_predictions, vocab] and, with a sentence objective,
    `next_sentence_logits` float32 [batch, 2]: 0 = B is A's continuation in
    its original order; 1 = B comes from another document (next-sentence)
    or A and B are swapped (sentence-order).

    Args:
      encoder: a `BertEncoder` of any family.
    """

    def __init__(self, encoder, **kwargs):
        super().__init__(**kwargs)
        config = encoder.config
        self.encoder = encoder
        self.masked_lm_head = MaskedLMHead(
            config.vocab_size,
            hidden_act=encoder.masked_lm_activation or config.hidden_act,
            initializer_range=config.initializer_range,
            layer_norm_epsilon=config.layer_norm_epsilon,
            embedding_size=config.embedding_size, name="masked_lm_head")
        hidden_size = config.hidden_size
        self.masked_lm_head.build((None, None, hidden_size))
        self.next_sentence_head = None
        if encoder.sentence_objective is not None:
            if encoder.pooler is None:
                raise ValueError(
                    f"the {encoder.sentence_objective} head reads "
                    "pooled_output: build the encoder with use_pooler=True")
            self.next_sentence_head = NextSentenceHead(
                initializer_range=config.initializer_range,
                name="next_sentence_head")
            self.next_sentence_head.build((None, hidden_size))
        # Every variable exists now; nothing is left for a build() call (or a
        # build config in a `.keras` file) to create.
        self.built = True

    def call(self, inputs, training=None):
        outputs = self.encoder(
            {name: inputs[name] for name in self.encoder.input}, training=training)
        logits = {"masked_lm_logits": self.masked_lm_head(
            outputs["sequence_output"], inputs["masked_lm_positions"],
            self.encoder.embeddings.word_embeddings)}
        if self.next_sentence_head is not None:
            logits["next_sentence_logits"] = self.next_sentence_head(
                outputs["pooled_output"])
        return logits

    @classmethod
    def from_pretrained(cls, name_or_path, strict=False, **config_overrides):
        """The encoder of any family's checkpoint (loaded strictly) with its
        pretraining heads where the checkpoint has them (with `strict`, they
        must be there); see `tfbert.checkpoints.load_pretrainer`."""
        return checkpoints().load_pretrainer(name_or_path, strict=strict,
                                             **config_overrides)

    from_preset = from_pretrained  # keras-hub's name


BertPretrainer = loadable_as(MaskedLMPretrainer, "BertPretrainer")
