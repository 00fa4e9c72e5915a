"""`SpanLabeler` (formerly `BertSpanLabeler`): start/end logits for
extractive question answering."""

import keras

from tfbert.layers import SpanLabelingHead
from tfbert.models.checkpoint_entry import checkpoints
from tfbert.models.encoder_task_model import EncoderTaskModel, loadable_as


@keras.saving.register_keras_serializable(package="tfbert")
class SpanLabeler(EncoderTaskModel, keras.Model):
    """An encoder with a `SpanLabelingHead` on its sequence output.

    Inputs: the encoder's input dict. Outputs: a dict of float32
    [batch, seq] `start_logits` and `end_logits`; padding positions get
    `tfbert.layers.MASKED_LOGIT` (-1e9).

    The head reads only `sequence_output`: build the encoder with
    `use_pooler=False` (as `from_pretrained` does), or the pooler's
    variables are trained with no gradient.

    Args:
      encoder: a `BertEncoder` of any family.
    """

    def __init__(self, encoder, **kwargs):
        self.encoder = encoder
        self.head = SpanLabelingHead(
            initializer_range=encoder.config.initializer_range,
            name="span_labeling_head")
        inputs = encoder.input
        super().__init__(inputs=inputs,
                         outputs=self.head_outputs(encoder(inputs), inputs),
                         **kwargs)

    def head_outputs(self, encoder_outputs, inputs, training=None):
        """A dict of float32 [batch, seq] `start_logits` and `end_logits`
        from the encoder's `sequence_output`, padding masked by
        `inputs["input_mask"]`."""
        start, end = self.head(encoder_outputs["sequence_output"],
                               inputs["input_mask"])
        return {"start_logits": start, "end_logits": end}

    @classmethod
    def from_pretrained(cls, name_or_path, **config_overrides):
        """A span labeler on the encoder of any family's checkpoint (see
        `tfbert.Encoder.from_pretrained`), built without a pooler; the head
        is newly initialised."""
        config_overrides.setdefault("use_pooler", False)
        return cls(checkpoints().load_encoder(name_or_path,
                                              **config_overrides))

    from_preset = from_pretrained  # keras-hub's name


BertSpanLabeler = loadable_as(SpanLabeler, "BertSpanLabeler")
