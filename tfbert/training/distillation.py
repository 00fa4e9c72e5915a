"""Task distillation: a student learns from the hard labels and from a
fine-tuned teacher's outputs (Hinton et al., 2015; DistilBERT's task loss).

    loss = alpha * hard_loss(labels, student)
           + (1 - alpha) * T^2 * KL(softmax(teacher / T) || softmax(student / T))

For regression the soft term is the squared error to the teacher's score;
for multi-label classification it is the binary KL of each label's
tempered sigmoid, averaged over the labels; for tagging it is the KL above
per token, averaged over the tokens the hard loss reads (each word's first
piece). An example without a label (a teacher-labelled one of
`--distill_file`) adds the soft term only.

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
import tensorflow as tf

from tfbert.data.ner_alignment import IGNORE_LABEL


@dataclasses.dataclass(frozen=True)
class DistillationConfig:
    """How much the student follows the teacher.

    Attributes:
      alpha: weight of the hard-label loss, in [0, 1]; the teacher's term
        gets `1 - alpha`.
      temperature: softmax temperature T > 0 of both logit sets.
      hidden_weight: weight (>= 0) of the intermediate-layer term
        `hidden_state_loss` (`LayerTransfer`); 0: off.
      attention_weight: weight (>= 0) of the intermediate-layer term
        `attention_loss`; 0: off.
    """

    alpha: float = 0.5
    temperature: float = 2.0
    hidden_weight: float = 0.0
    attention_weight: float = 0.0

    def __post_init__(self):
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if not self.temperature > 0:
            raise ValueError(
                f"temperature must be positive, got {self.temperature}")
        for name in ("hidden_weight", "attention_weight"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got "
                                 f"{getattr(self, name)}")

    @property
    def transfers_layers(self):
        """Whether the student also learns the teacher's intermediate
        layers (`LayerTransfer`)."""
        return self.hidden_weight > 0 or self.attention_weight > 0


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


def binary_soft_target_loss(teacher_logits, student_logits, temperature):
    """`T^2 * KL(Bernoulli(sigmoid(teacher/T)) || Bernoulli(sigmoid(
    student/T)))` of each label, averaged over labels and batch: the soft
    term of multi-label classification, whose labels are independent
    yes/no decisions. Logits: float32 [batch, num_labels]; returns a float32
    scalar.

    Not `LogitsDistillation`: it takes a softmax over the labels, which
    would make them compete.
    """
    t = keras.ops.cast(teacher_logits, "float32") / temperature
    s = keras.ops.cast(student_logits, "float32") / temperature
    p = keras.ops.sigmoid(t)
    # log sigmoid(x) = -softplus(-x); log(1 - sigmoid(x)) = -softplus(x).
    kl = (p * (keras.ops.softplus(-s) - keras.ops.softplus(-t))
          + (1 - p) * (keras.ops.softplus(s) - keras.ops.softplus(t)))
    return temperature ** 2 * keras.ops.mean(kl)


def with_teacher_outputs(labels, teacher_outputs):
    """The `y_true` that `TaskDistillationLoss` reads: float32
    [N, label_width + num_outputs], the labels (a class id or score in
    column 0, or the multi-hot row [N, num_labels] of multi-label
    classification) and the teacher's logits [N, num_outputs] after them.
    NaN labels mark examples that only the teacher labelled
    (`unlabelled`)."""
    labels = np.asarray(labels, np.float32)
    if labels.ndim == 1:
        labels = labels[:, None]
    return np.concatenate(
        [labels, np.asarray(teacher_outputs, np.float32)], axis=1)


def unlabelled(count, label_width=1):
    """The labels of `count` examples that only the teacher labelled:
    float32 NaN [count] (or [count, label_width])."""
    shape = (count,) if label_width == 1 else (count, label_width)
    return np.full(shape, np.nan, np.float32)


def masked_mean(values, mask):
    """Mean of float32 `values` over the positions where `mask` (bool or
    0/1, the shape of `values`) holds; 0 when none does."""
    weights = keras.ops.cast(mask, "float32")
    return (keras.ops.sum(values * weights)
            / keras.ops.maximum(keras.ops.sum(weights), 1.0))


# The tag of a word's first piece in a sentence only the teacher labelled:
# skipped by the hard loss (negative), read by the soft term.
UNLABELLED_WORD = -1


@keras.saving.register_keras_serializable(package="tfbert")
class TaskDistillationLoss(keras.losses.Loss):
    """The student's training loss for one classification output: a
    sequence's classes (a score for regression, independent labels for
    multi-label classification), or a SQuAD window's start (or end)
    position over its tokens.

    `y_true`: float32 [batch, label_width + num_outputs] as
    `with_teacher_outputs` builds it (label_width: 1, or num_labels for
    multi-label); `y_pred`: the student's float32 logits [batch, n] (a
    score [batch, 1] for regression), `n <= num_outputs`: a batch trimmed
    to its longest row meets the first `n` teacher logits (the teacher's
    logits past a row's end are `MASKED_LOGIT`, like the student's, and add
    0). The hard term is averaged over the labelled rows only (labels not
    NaN), the soft term over all rows.

    Args:
      config: a `DistillationConfig`.
      regression: the soft term is the squared error to the teacher's
        score (and the hard term to the label) instead of cross-entropy and
        KL.
      multi_label: binary cross-entropy to the multi-hot labels and
        `binary_soft_target_loss` to the teacher's.
    """

    def __init__(self, config, regression=False, multi_label=False,
                 name="distillation_loss"):
        super().__init__(name=name)
        if isinstance(config, dict):  # as `get_config` stores it
            config = DistillationConfig(**config)
        if regression and multi_label:
            raise ValueError("regression and multi_label exclude each other")
        self.config = config
        self.regression = regression
        self.multi_label = multi_label

    def get_config(self):
        return {"config": dataclasses.asdict(self.config),
                "regression": self.regression,
                "multi_label": self.multi_label, "name": self.name}

    def call(self, y_true, y_pred):
        y_pred = keras.ops.cast(y_pred, "float32")
        width = keras.ops.shape(y_pred)[1] if self.multi_label else 1
        labels = y_true[:, :width]
        teacher = y_true[:, width:width + keras.ops.shape(y_pred)[1]]
        labelled = keras.ops.logical_not(keras.ops.isnan(labels[:, 0]))
        labels = keras.ops.where(keras.ops.isnan(labels), 0.0, labels)
        temperature = self.config.temperature
        if self.regression:
            hard = keras.ops.square(labels[:, 0] - y_pred[:, 0])
            soft = keras.ops.mean(keras.ops.square(teacher - y_pred))
        elif self.multi_label:
            hard = keras.ops.mean(keras.ops.binary_crossentropy(
                labels, y_pred, from_logits=True), axis=-1)
            soft = binary_soft_target_loss(teacher, y_pred, temperature)
        else:
            hard = keras.losses.sparse_categorical_crossentropy(
                keras.ops.cast(labels[:, 0], "int32"), y_pred,
                from_logits=True)
            soft = soft_target_loss(teacher, y_pred, temperature)
        alpha = self.config.alpha
        return alpha * masked_mean(hard, labelled) + (1 - alpha) * soft


@keras.saving.register_keras_serializable(package="tfbert")
class TokenDistillationLoss(keras.losses.Loss):
    """The student's training loss for tagging: `alpha * hard_loss(tags,
    logits) + (1 - alpha) * T^2 * KL` per token, the KL averaged over the
    positions whose tag is not `IGNORE_LABEL` (each word's first piece:
    where the hard loss reads a tag, plus the words of teacher-labelled
    sentences, whose tag is `UNLABELLED_WORD`).

    `y_true`: float32 [batch, seq, 1 + num_labels]: the tag id (negative
    where the hard loss skips the position), then the teacher's logits (a
    CRF teacher's emissions); `y_pred`: the student's float32 logits
    [batch, seq, num_labels] (a CRF student's emissions).

    Args:
      config: a `DistillationConfig`.
      hard_loss: `hard_loss(tags, logits)` -> float32 scalar, the task's
        own loss: tags int32 [batch, seq] (negative: skipped), e.g.
        `token_classification_loss`, or a CRF model's
        `crf_negative_log_likelihood` (a model's method, which `get_config`
        cannot store: such a loss is rebuilt with its model, not read back).
    """

    def __init__(self, config, hard_loss, name="token_distillation_loss"):
        super().__init__(name=name)
        if isinstance(config, dict):
            config = DistillationConfig(**config)
        if isinstance(hard_loss, (str, dict)):
            hard_loss = keras.saving.deserialize_keras_object(hard_loss)
        self.config = config
        self.hard_loss = hard_loss

    def get_config(self):
        return {"config": dataclasses.asdict(self.config),
                "hard_loss": keras.saving.serialize_keras_object(
                    self.hard_loss),
                "name": self.name}

    def call(self, y_true, y_pred):
        y_pred = tf.cast(y_pred, tf.float32)
        tags = tf.cast(y_true[..., 0], tf.int32)
        num_labels = tf.shape(y_pred)[-1]
        teacher = tf.reshape(y_true[..., 1:], [-1, num_labels])
        kept = tf.reshape(tags, [-1]) != IGNORE_LABEL
        soft = soft_target_loss(tf.boolean_mask(teacher, kept),
                                tf.boolean_mask(tf.reshape(
                                    y_pred, [-1, num_labels]), kept),
                                self.config.temperature)
        alpha = self.config.alpha
        return (alpha * self.hard_loss(tags, y_pred)
                + (1 - alpha) * soft)
