"""Masked-LM accuracy over the real prediction slots of a batch."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tfbert")
class MaskedLMAccuracy(keras.metrics.Metric):
    """Fraction of masked tokens predicted exactly (argmax of the logits).

    Keras passes no sample weights to compile-time `metrics`, so the unused
    prediction slots are recognised by their label instead: they hold
    `ignore_id` ([PAD], which is never a real masked-LM target).

    Args:
      ignore_id: the label of unused slots (the [PAD] id).

    Update args:
      y_true: int [batch, P] original ids.
      y_pred: float [batch, P, vocab] logits.
    """

    def __init__(self, ignore_id=0, name="masked_lm_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.ignore_id = ignore_id
        self.correct = self.add_variable((), "zeros", name="correct")
        self.total = self.add_variable((), "zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        real = ops.cast(ops.not_equal(y_true, self.ignore_id), "float32")
        if sample_weight is not None:
            real = real * ops.cast(sample_weight, "float32")
        hits = ops.cast(ops.equal(
            ops.cast(ops.argmax(y_pred, axis=-1), "int32"), y_true), "float32")
        self.correct.assign_add(ops.sum(hits * real))
        self.total.assign_add(ops.sum(real))

    def result(self):
        return ops.divide_no_nan(self.correct, self.total)

    def reset_state(self):
        self.correct.assign(0.0)
        self.total.assign(0.0)

    def get_config(self):
        return {**super().get_config(), "ignore_id": self.ignore_id}
