"""`BertClassifier`: sequence classification and regression."""

import keras

from tfbert.layers import ClassificationHead
from tfbert.models.encoder_task_model import EncoderTaskModel


@keras.saving.register_keras_serializable(package="tfbert")
class BertClassifier(EncoderTaskModel, keras.Model):
    """An encoder with a `ClassificationHead` on its pooled output.

    Inputs: the encoder's input dict. Output: float32 logits
    [batch, num_classes]; with `num_classes=1` a regression score [batch, 1].

    Args:
      encoder: a `BertEncoder`.
      num_classes: number of classes, or 1 for regression.
      dropout: dropout rate before the output layer.
    """

    def __init__(self, encoder, num_classes, dropout=0.1, **kwargs):
        self.encoder = encoder
        self.num_classes = num_classes
        self.dropout = dropout
        self.head = ClassificationHead(
            num_classes, dropout=dropout,
            initializer_range=encoder.config.initializer_range,
            name="classification_head")
        inputs = encoder.input
        logits = self.head(encoder(inputs)["pooled_output"])
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    def task_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}
