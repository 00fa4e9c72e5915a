"""Per-token classification head (NER)."""

import keras


@keras.saving.register_keras_serializable(package="tfbert")
class TokenClassificationHead(keras.layers.Layer):
    """Dropout then a dense layer on every position.

    Args:
      num_labels: number of tags.
      dropout: dropout rate before the dense layer.
      initializer_range: stddev of the truncated-normal initializer.

    Call args:
      sequence_output: [batch, seq, H].

    Returns:
      float32 logits [batch, seq, num_labels].
    """

    def __init__(self, num_labels, dropout=0.1, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.num_labels = num_labels
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.dropout_layer = keras.layers.Dropout(dropout, name="dropout")
        self.dense = keras.layers.Dense(
            num_labels, dtype="float32", name="logits",
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=initializer_range))

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, sequence_output, training=None):
        return self.dense(self.dropout_layer(sequence_output, training=training))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.num_labels,)

    def get_config(self):
        config = super().get_config()
        config.update(num_labels=self.num_labels, dropout=self.dropout,
                      initializer_range=self.initializer_range)
        return config
