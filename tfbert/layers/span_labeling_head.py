"""Start/end span head for extractive question answering (SQuAD)."""

import keras

from tfbert.layers.masking import padding_bias


@keras.saving.register_keras_serializable(package="tfbert")
class SpanLabelingHead(keras.layers.Layer):
    """A dense layer with two outputs per position: start and end logits.

    Args:
      initializer_range: stddev of the truncated-normal initializer.

    Call args:
      sequence_output: [batch, seq, H].
      input_mask: optional int [batch, seq]; padding positions get a logit of
        `MASKED_LOGIT` (-1e9) so they are never predicted.

    Returns:
      `(start_logits, end_logits)`, each float32 [batch, seq].
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

    def call(self, sequence_output, input_mask=None):
        logits = self.dense(sequence_output)
        if input_mask is not None:
            logits = logits + padding_bias(input_mask)[..., None]
        return logits[..., 0], logits[..., 1]

    def compute_output_shape(self, input_shape, *args):
        return tuple(input_shape[:-1]), tuple(input_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range)
        return config
