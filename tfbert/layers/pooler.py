"""The BERT pooler: a tanh dense layer on the [CLS] position."""

import keras

from tfbert.layers.activations import get_activation


@keras.saving.register_keras_serializable(package="tfbert")
class Pooler(keras.layers.Layer):
    """`tanh(Dense(sequence_output[:, 0]))`, or another activation: the
    sequence classifiers of DistilBERT (ReLU), ELECTRA (GELU) and RoBERTa
    (tanh, newly initialised) put the same dense layer on the first token
    (see `BertEncoder.classification_activation`).

    Args:
      initializer_range: stddev of the truncated-normal initializer.
      activation: a name for `get_activation`.

    Call args:
      sequence_output: [batch, seq, H].

    Returns:
      [batch, H] float32.
    """

    def __init__(self, initializer_range=0.02, activation="tanh", **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.activation = activation

    def build(self, input_shape):
        self.dense = keras.layers.Dense(
            input_shape[-1],
            activation=get_activation(self.activation),
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=self.initializer_range),
            dtype=self.dtype_policy, name="dense")
        self.dense.build((input_shape[0], input_shape[-1]))
        self.built = True

    def call(self, sequence_output):
        return keras.ops.cast(self.dense(sequence_output[:, 0]), "float32")

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range,
                      activation=self.activation)
        return config
