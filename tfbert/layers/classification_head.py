"""Sequence-level classification or regression head."""

import keras


@keras.saving.register_keras_serializable(package="tfbert")
class ClassificationHead(keras.layers.Layer):
    """Dropout then a dense layer on the pooled output.

    With `num_classes=1` the single output is a regression score (STS-B).

    Args:
      num_classes: number of logits; 1 for regression.
      dropout: dropout rate before the dense layer.
      initializer_range: stddev of the truncated-normal initializer.

    Call args:
      pooled_output: [batch, H].

    Returns:
      float32 logits [batch, num_classes].
    """

    def __init__(self, num_classes, dropout=0.1, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.dropout_layer = keras.layers.Dropout(dropout, name="dropout")
        self.dense = keras.layers.Dense(
            num_classes, dtype="float32", name="logits",
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=initializer_range))

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, pooled_output, training=None):
        return self.dense(self.dropout_layer(pooled_output, training=training))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.num_classes,)

    def get_config(self):
        config = super().get_config()
        config.update(num_classes=self.num_classes, dropout=self.dropout,
                      initializer_range=self.initializer_range)
        return config
