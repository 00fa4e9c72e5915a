"""`BertSpanLabeler`: start/end logits for extractive question answering."""

import keras

from tfbert.layers import SpanLabelingHead
from tfbert.models.encoder_task_model import EncoderTaskModel


@keras.saving.register_keras_serializable(package="tfbert")
class BertSpanLabeler(EncoderTaskModel, keras.Model):
    """An encoder with a `SpanLabelingHead` on its sequence output.

    Inputs: the encoder's input dict. Outputs: a dict of float32
    [batch, seq] `start_logits` and `end_logits`; padding positions get
    `tfbert.layers.MASKED_LOGIT` (-1e9).

    Args:
      encoder: a `BertEncoder`.
    """

    def __init__(self, encoder, **kwargs):
        self.encoder = encoder
        self.head = SpanLabelingHead(
            initializer_range=encoder.config.initializer_range,
            name="span_labeling_head")
        inputs = encoder.input
        start, end = self.head(encoder(inputs)["sequence_output"],
                               inputs["input_mask"])
        super().__init__(inputs=inputs,
                         outputs={"start_logits": start, "end_logits": end},
                         **kwargs)
