"""Task distillation: a student learns from the hard labels and from a
fine-tuned teacher's outputs (Hinton et al., 2015; DistilBERT's task loss).

    loss = alpha * hard_loss(labels, student)
           + (1 - alpha) * T^2 * KL(softmax(teacher / T) || softmax(student / T))

For regression the soft term is the squared error to the teacher's score.

The soft term is Keras' own `keras.distillation.LogitsDistillation`. Keras'
`Distiller` is not used: it is a `Model` that holds the teacher and owns
`compile`/`train_step`, so the teacher would be saved in the student's
checkpoint and tfbert's resumable `train` (its checkpoint of model,
optimizer, RNG state and progress) could not drive it. Here the student stays
a plain task model and the teacher's logits arrive with the labels.
"""

import dataclasses

import keras
import numpy as np


@dataclasses.dataclass(frozen=True)
class DistillationConfig:
    """How much the student follows the teacher.

    Attributes:
      alpha: weight of the hard-label loss, in [0, 1]; the teacher's term
        gets `1 - alpha`.
      temperature: softmax temperature T > 0 of both logit sets.
    """

    alpha: float = 0.5
    temperature: float = 2.0

    def __post_init__(self):
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if not self.temperature > 0:
            raise ValueError(
                f"temperature must be positive, got {self.temperature}")


def soft_target_loss(teacher_logits, student_logits, temperature):
    """`T^2 * KL(softmax(teacher/T) || softmax(student/T))`, averaged over
    the batch. Logits: float32 [batch, num_classes]; returns a float32
    scalar."""
    # A `KLDivergence` instance, not Keras' default "kl_divergence": only for
    # an instance does `LogitsDistillation` take the softmax and scale by
    # T^2; the string resolves to a plain function, applied to the logits.
    return keras.distillation.LogitsDistillation(
        temperature=float(temperature),
        loss=keras.losses.KLDivergence()).compute_loss(
            teacher_logits, student_logits)


def with_teacher_outputs(labels, teacher_outputs):
    """The `y_true` that `TaskDistillationLoss` reads: float32
    [N, 1 + num_outputs], the label (class id or score) in column 0 and the
    teacher's logits [N, num_outputs] after it."""
    return np.concatenate([np.asarray(labels, np.float32)[:, None],
                           np.asarray(teacher_outputs, np.float32)], axis=1)


@keras.saving.register_keras_serializable(package="tfbert")
class TaskDistillationLoss(keras.losses.Loss):
    """The student's training loss for one classification output: a
    sequence's classes (a score for regression), or a SQuAD window's start
    (or end) position over its tokens.

    `y_true`: float32 [batch, 1 + num_outputs] as `with_teacher_outputs`
    builds it; `y_pred`: the student's float32 logits [batch, n] (a score
    [batch, 1] for regression), `n <= num_outputs`: a batch trimmed to its
    longest row meets the first `n` teacher logits (the teacher's logits
    past a row's end are `MASKED_LOGIT`, like the student's, and add 0).

    Args:
      config: a `DistillationConfig`.
      regression: the soft term is the squared error to the teacher's
        score (and the hard term to the label) instead of cross-entropy and
        KL.
    """

    def __init__(self, config, regression=False, name="distillation_loss"):
        super().__init__(name=name)
        if isinstance(config, dict):  # as `get_config` stores it
            config = DistillationConfig(**config)
        self.config = config
        self.regression = regression

    def get_config(self):
        return {"config": dataclasses.asdict(self.config),
                "regression": self.regression, "name": self.name}

    def call(self, y_true, y_pred):
        y_pred = keras.ops.cast(y_pred, "float32")
        labels = y_true[:, 0]
        teacher = y_true[:, 1:1 + keras.ops.shape(y_pred)[1]]
        if self.regression:
            hard = keras.ops.mean(keras.ops.square(labels - y_pred[:, 0]))
            soft = keras.ops.mean(keras.ops.square(teacher - y_pred))
        else:
            hard = keras.ops.mean(keras.losses.sparse_categorical_crossentropy(
                keras.ops.cast(labels, "int32"), y_pred, from_logits=True))
            soft = soft_target_loss(teacher, y_pred, self.config.temperature)
        alpha = self.config.alpha
        return alpha * hard + (1 - alpha) * soft
