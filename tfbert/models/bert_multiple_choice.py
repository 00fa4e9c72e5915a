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

    @staticmethod
    def _flat(inputs):
        """[batch, N, seq] inputs as [batch * N, seq], and N."""
        num_choices = ops.shape(inputs["input_word_ids"])[1]
        return {name: ops.reshape(inputs[name],
                                  (-1, ops.shape(inputs[name])[-1]))
                for name in INPUT_NAMES}, num_choices

    def _scores(self, features, num_choices, training=None):
        return ops.reshape(self.head(features, training=training),
                           (-1, num_choices))

    def call(self, inputs, training=None):
        flat, num_choices = self._flat(inputs)
        outputs = self.encoder(flat, training=training)
        features = (outputs["pooled_output"] if self.pooler is None
                    else self.pooler(outputs["sequence_output"]))
        return self._scores(features, num_choices, training)

    def inference_logits(self, inputs):
        """`self(inputs, training=False)` as exports compute it, with
        `BertEncoder.first_token_output`. float32 [batch, num_choices]."""
        flat, num_choices = self._flat(inputs)
        first_token = self.encoder.first_token_output(flat)
        pooler = self.encoder.pooler if self.pooler is None else self.pooler
        return self._scores(pooler(first_token), num_choices, training=False)

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
