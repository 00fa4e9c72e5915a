"""`BertClassifier`: sequence classification and regression."""

import keras

from tfbert.layers import ClassificationHead


@keras.saving.register_keras_serializable(package="tfbert")
class BertClassifier(keras.Model):
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

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder),
                "num_classes": self.num_classes, "dropout": self.dropout,
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(
            config["encoder"])
        return cls(**config)
