"""ELECTRA's discriminator head: which tokens a generator replaced."""

import keras
from keras import ops

from tfbert.layers.activations import get_activation


@keras.saving.register_keras_serializable(package="tfbert")
class ReplacedTokenHead(keras.layers.Layer):
    """`Dense(1)(act(Dense(H)(x)))` at every position.

    Args:
      hidden_act: activation name (see `get_activation`).
      initializer_range: stddev of the truncated-normal initializer.

    Call args:
      sequence_output: [batch, seq, H].

    Returns:
      float32 logits [batch, seq]; positive means "replaced".
    """

    def __init__(self, hidden_act="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range

    def build(self, input_shape):
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.dense = keras.layers.Dense(
            input_shape[-1], activation=get_activation(self.hidden_act),
            kernel_initializer=init, dtype=self.dtype_policy, name="dense")
        self.dense.build(input_shape)
        self.prediction = keras.layers.Dense(
            1, kernel_initializer=init, dtype="float32", name="prediction")
        self.prediction.build(tuple(input_shape[:-1]) + (input_shape[-1],))
        self.built = True

    def call(self, sequence_output):
        return ops.squeeze(self.prediction(self.dense(sequence_output)), -1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update(hidden_act=self.hidden_act,
                      initializer_range=self.initializer_range)
        return config
