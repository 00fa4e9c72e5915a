"""The BERT pooler: a tanh dense layer on the [CLS] position."""

import keras


@keras.saving.register_keras_serializable(package="tfbert")
class Pooler(keras.layers.Layer):
    """`tanh(Dense(sequence_output[:, 0]))`.

    Call args:
      sequence_output: [batch, seq, H].

    Returns:
      [batch, H] float32.
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range

    def build(self, input_shape):
        self.dense = keras.layers.Dense(
            input_shape[-1], activation="tanh",
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
        config.update(initializer_range=self.initializer_range)
        return config
