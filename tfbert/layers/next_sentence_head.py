"""Next-sentence prediction head."""

import keras


@keras.saving.register_keras_serializable(package="tfbert")
class NextSentenceHead(keras.layers.Layer):
    """A two-way dense layer on the pooled output: 0 = the second segment
    really follows the first, 1 = it is a random segment.

    Call args:
      pooled_output: [batch, H].

    Returns:
      float32 logits [batch, 2].
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            2, dtype="float32", name="logits",
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=initializer_range))

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, pooled_output):
        return self.dense(pooled_output)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 2)

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range)
        return config
