"""Intermediate-layer distillation: a student also learns what its
teacher's layers compute, beside its task loss
(`tfbert.training.distillation`), as TinyBERT and MiniLM do.

Student layer i of K learns teacher layer `(i + 1) * N // K - 1` of N, the
last of the i-th group of N/K teacher layers (TinyBERT's uniform mapping:
with K = N / 2 each student layer stands for two teacher layers):
- hidden states (`hidden_state_loss`): the squared error between the two
  layers' outputs, the student's through a learned dense projection where
  the widths differ;
- attention (`attention_loss`): the KL divergence of the student's
  attention distributions from the teacher's, per head and query token
  (MiniLM's term, which it takes at the last layer; here every mapped
  layer has it). It needs the same number of heads on both sides.

The teacher runs in every training step, without dropout and without
gradients: its intermediate states ([seq, H] per layer and example) are too
large to cache with the dataset, as its logits are.

Keras' `FeatureDistillation` is not used: it averages over every position,
padding included, and finds features by layer name in a functional model,
while the block outputs here are the encoder's `encoder_outputs` and the
attention scores come from its blocks (`MultiHeadSelfAttention.scores`).
"""

import types

import keras
from keras import ops

from tfbert.training.distillation import masked_mean


def layer_pairs(num_student_layers, num_teacher_layers):
    """`[(i, j)]`: student layer i learns teacher layer
    `j = (i + 1) * N // K - 1`, for every i < K.

    Raises:
      ValueError: if the student has more layers than the teacher.
    """
    if not 1 <= num_student_layers <= num_teacher_layers:
        raise ValueError(
            f"a student of {num_student_layers} layers cannot learn the "
            f"layers of a teacher of {num_teacher_layers}")
    return [(i, (i + 1) * num_teacher_layers // num_student_layers - 1)
            for i in range(num_student_layers)]


def hidden_state_loss(student_hidden, teacher_hidden, mask):
    """Mean squared error between two layers' outputs, over the real
    tokens and the hidden units.

    Args:
      student_hidden, teacher_hidden: float32 [batch, seq, H] (the
        student's projected to the teacher's width).
      mask: int [batch, seq], 1 for real tokens.

    Returns:
      A float32 scalar.
    """
    error = ops.mean(ops.square(ops.cast(student_hidden, "float32")
                                - ops.cast(teacher_hidden, "float32")),
                     axis=-1)
    return masked_mean(error, mask)


def attention_loss(student_scores, teacher_scores, mask):
    """`KL(teacher's attention || student's)` of each head and query token,
    averaged over the heads and the real query tokens.

    Args:
      student_scores, teacher_scores: float32 [batch, heads, seq, seq],
        the scores whose softmax over the last axis is the attention
        distribution (`MultiHeadSelfAttention.scores`: padding keys are
        masked there).
      mask: int [batch, seq], 1 for real tokens.

    Returns:
      A float32 scalar.
    """
    teacher_log = ops.log_softmax(ops.cast(teacher_scores, "float32"), axis=-1)
    student_log = ops.log_softmax(ops.cast(student_scores, "float32"), axis=-1)
    kl = ops.sum(ops.exp(teacher_log) * (teacher_log - student_log), axis=-1)
    return masked_mean(ops.mean(kl, axis=1), mask)


def _block_inputs(encoder, features, block_outputs):
    """What each of `encoder`'s layers read, given their outputs: the
    embeddings (computed again, without dropout: `encoder_outputs` leaves
    them out), then each block's output before the last."""
    return ([encoder.embedding_output(features, training=False)]
            + list(block_outputs[:-1]))


@keras.saving.register_keras_serializable(package="tfbert")
class LayerTransfer(keras.Model):
    """A task model's training form that also learns its teacher's layers:
    `fit` runs it in place of the student (`tfbert.training.train`'s
    `training_model`), and the student stays a normal task model.

    Its outputs are the student's (`student.head_outputs` on the student's
    encoder), so the task's loss applies unchanged; in training it adds
    `hidden_weight * sum of hidden_state_loss + attention_weight * sum of
    attention_loss` over the layer pairs (`layer_pairs`) with `add_loss`.

    Its variables are the student's and, where the widths differ, one
    `Dense(teacher width)` projection per layer pair. The teacher is held
    outside Keras' and TensorFlow's tracking: it is not trained, and not
    part of a checkpoint of this model. It is not saved as a Keras file
    (it has no config; save the student).

    Args:
      student: the task model that trains (a `SequenceClassifier`,
        `SpanLabeler`, `TokenClassifier`, ...).
      teacher: a trained task model on an encoder with at least as many
        layers, fed the same token-id inputs.
      config: a `tfbert.training.distillation.DistillationConfig`.

    Raises:
      ValueError: if neither term has a weight, the student has more layers
        than the teacher, or the attention term meets different numbers of
        heads.
    """

    def __init__(self, student, teacher, config, **kwargs):
        super().__init__(name=kwargs.pop("name", "layer_transfer"), **kwargs)
        self.student = student
        self._frozen = types.SimpleNamespace(teacher=teacher)
        if not config.transfers_layers:
            raise ValueError("neither intermediate-layer term has a weight")
        self.hidden_weight = float(config.hidden_weight)
        self.attention_weight = float(config.attention_weight)
        student_config = student.encoder.config
        teacher_config = teacher.encoder.config
        self.pairs = layer_pairs(student_config.num_layers,
                                 teacher_config.num_layers)
        if (self.attention_weight
                and student_config.num_heads != teacher_config.num_heads):
            raise ValueError(
                f"attention transfer needs the teacher's "
                f"{teacher_config.num_heads} heads; the student has "
                f"{student_config.num_heads}")
        self.num_projections = 0
        if (self.hidden_weight
                and student_config.hidden_size != teacher_config.hidden_size):
            self.num_projections = len(self.pairs)
        for n in range(self.num_projections):
            projection = keras.layers.Dense(
                teacher_config.hidden_size,
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=student_config.initializer_range),
                name=f"hidden_projection_{n}")
            # Built here, in the caller's strategy scope, not in the step.
            projection.build((None, None, student_config.hidden_size))
            # An attribute each: TensorFlow checkpoints attributes, not the
            # layers of a list.
            setattr(self, f"hidden_projection_{n}", projection)

    @property
    def projections(self):
        """The `Dense` projections of the student's layer outputs to the
        teacher's width, one per layer pair (none where the widths agree
        or without the hidden-state term)."""
        return [getattr(self, f"hidden_projection_{n}")
                for n in range(self.num_projections)]

    @property
    def teacher(self):
        return self._frozen.teacher

    def call(self, inputs, training=None):
        student = self.student
        features = student.encoder_inputs(inputs)
        encoder_outputs = student.encoder(features, training=training)
        outputs = student.head_outputs(encoder_outputs, inputs,
                                       training=training)
        if training:
            self.add_loss(self.transfer_loss(
                inputs, features, encoder_outputs["encoder_outputs"]))
        return outputs

    def transfer_loss(self, inputs, features, student_outputs):
        """The intermediate-layer terms, a float32 scalar.

        Args:
          inputs: the task model's inputs.
          features: the student encoder's input dict for them.
          student_outputs: the student's block outputs on `features`
            (`encoder_outputs`), float32 [batch, seq, H] each.
        """
        teacher_encoder = self.teacher.encoder
        teacher_features = self.teacher.encoder_inputs(inputs)
        teacher_outputs = [
            ops.stop_gradient(x) for x in teacher_encoder(
                teacher_features, training=False)["encoder_outputs"]]
        mask = features["input_mask"]
        encoder = self.student.encoder
        total = 0.0
        if self.hidden_weight:
            for n, (i, j) in enumerate(self.pairs):
                hidden = student_outputs[i]
                if self.projections:
                    hidden = self.projections[n](hidden)
                total += self.hidden_weight * hidden_state_loss(
                    hidden, teacher_outputs[j], mask)
        if self.attention_weight:
            student_inputs = _block_inputs(encoder, features, student_outputs)
            teacher_inputs = _block_inputs(teacher_encoder, teacher_features,
                                           teacher_outputs)
            for i, j in self.pairs:
                student_scores = encoder.block(i).attention.scores(
                    student_inputs[i], mask)
                teacher_scores = teacher_encoder.block(j).attention.scores(
                    teacher_inputs[j], mask)
                total += self.attention_weight * attention_loss(
                    student_scores, ops.stop_gradient(teacher_scores), mask)
        return total
