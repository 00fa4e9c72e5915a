"""`MultipleChoiceClassifier`: one score per (context, choice) pair,
softmax over the choices (SWAG)."""

import keras
from keras import ops

from tfbert.layers import ClassificationHead, Pooler
from tfbert.models.bert_encoder import INPUT_NAMES
from tfbert.models.encoder import Encoder
from tfbert.models.encoder_task_model import EncoderTaskModel


@keras.saving.register_keras_serializable(package="tfbert")
class MultipleChoiceClassifier(EncoderTaskModel, keras.Model):
    """An encoder of any family scoring each packed (context, choice) pair.

    Every pair is encoded on its own; its first token's vector goes through
    a `ClassificationHead` with one output, and the N scores of an example
    are its logits over the choices. The vector follows HF's
    `*ForMultipleChoice` of the family: the encoder's `pooled_output` where
    it has a pooler (BERT, ALBERT, RoBERTa), otherwise a new dense layer on
    the first token with the family's `classification_activation`
    (DistilBERT: ReLU, ELECTRA: GELU).

    Inputs: the encoder's three inputs, int32 [batch, num_choices, seq].
    Output: float32 logits [batch, num_choices].

    Args:
      encoder: a `BertEncoder` of any family.
      dropout: dropout rate before the scoring layer.
    """

    def __init__(self, encoder, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.dropout = dropout
        config = encoder.config
        self.pooler = None
        if encoder.pooler is None:
            self.pooler = Pooler(
                config.initializer_range,
                encoder.classification_activation or "tanh",
                name="multiple_choice_pooler")
            self.pooler.build((None, None, config.hidden_size))
        self.head = ClassificationHead(
            1, dropout=dropout, initializer_range=config.initializer_range,
            name="multiple_choice_head")
        self.head.build((None, config.hidden_size))
        self.built = True

    first_token_head = True

    def encoder_inputs(self, inputs):
        """[batch, N, seq] inputs as the encoder's [batch * N, seq]."""
        return {name: ops.reshape(inputs[name],
                                  (-1, ops.shape(inputs[name])[-1]))
                for name in INPUT_NAMES}

    def head_outputs(self, encoder_outputs, inputs, training=None):
        """float32 logits [batch, N] from the encoder's outputs on the
        [batch * N, seq] pairs (`pooled_output`, or the multiple-choice
        pooler on `sequence_output`'s first position)."""
        features = (encoder_outputs["pooled_output"] if self.pooler is None
                    else self.pooler(encoder_outputs["sequence_output"]))
        num_choices = ops.shape(inputs["input_word_ids"])[1]
        return ops.reshape(self.head(features, training=training),
                           (-1, num_choices))

    def call(self, inputs, training=None):
        outputs = self.encoder(self.encoder_inputs(inputs), training=training)
        return self.head_outputs(outputs, inputs, training)

    @classmethod
    def from_pretrained(cls, name_or_path, dropout=0.1, **config_overrides):
        """A multiple-choice model on the encoder of any family's checkpoint
        (see `tfbert.Encoder.from_pretrained`); the head is newly
        initialised."""
        return cls(Encoder.from_pretrained(name_or_path, **config_overrides),
                   dropout=dropout)

    from_preset = from_pretrained  # keras-hub's name

    def task_config(self):
        return {"dropout": self.dropout}
