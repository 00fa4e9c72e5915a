"""Linear-chain conditional random field over tag sequences."""

import keras
import numpy as np
from keras import ops

# Added to the score of a forbidden transition: exp(-1e4) is 0 in float32,
# so no forbidden sequence carries probability mass, while sums stay finite.
FORBIDDEN = -1e4


def iob2_constraints(labels):
    """Which IOB2 moves are allowed.

    Args:
      labels: the tag names, id order (e.g. ["O", "B-PER", "I-PER"]).

    Returns:
      `(allowed_transitions, allowed_start)`: bool numpy [L, L] (from, to)
      and [L]. `I-X` may only follow `B-X` or `I-X` and may not start a
      sequence; every other move is allowed. Tags outside the IOB2 pattern
      are unconstrained.
    """
    num_labels = len(labels)
    allowed = np.ones((num_labels, num_labels), bool)
    allowed_start = np.ones(num_labels, bool)
    for to, label in enumerate(labels):
        if not label.startswith("I-"):
            continue
        allowed_start[to] = False
        for source, previous in enumerate(labels):
            allowed[source, to] = previous in (f"B-{label[2:]}", label)
    return allowed, allowed_start


@keras.saving.register_keras_serializable(package="tfbert")
class CRF(keras.layers.Layer):
    """Linear-chain CRF: learned transition, start and end scores on top of
    per-position emission scores.

    The score of tags y_1..y_n given emissions e [n, L] is
    `start[y_1] + sum_t e[t, y_t] + sum_t trans[y_{t-1}, y_t] + end[y_n]`,
    with FORBIDDEN added to every disallowed transition. `log_likelihood`
    computes score(gold) - log sum_y exp(score(y)) by the forward algorithm;
    `decode` finds argmax_y score(y) by Viterbi, additionally forbidding
    disallowed first tags.

    The start constraint applies to decoding only: a training window cut
    from a long sentence may begin inside an entity (gold I-X first), which
    must not be an impossible sequence for the loss.

    In a functional model the layer is an identity on the emissions (so that
    it and its weights are part of the model and saved with it); use its
    methods for the loss and decoding.

    Args:
      num_labels: number of tags L.
      allowed_transitions: optional bool [L, L] (from, to); None allows all.
      allowed_start: optional bool [L]; None allows all.

    Call args:
      emissions: float32 [batch, seq, L]. Returned unchanged.
    """

    def __init__(self, num_labels, allowed_transitions=None,
                 allowed_start=None, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.num_labels = num_labels
        self.allowed_transitions = (
            None if allowed_transitions is None
            else np.asarray(allowed_transitions, bool).tolist())
        self.allowed_start = (None if allowed_start is None
                              else np.asarray(allowed_start, bool).tolist())
        self._transition_penalty = self._penalty(
            allowed_transitions, (num_labels, num_labels))
        self._start_penalty = self._penalty(allowed_start, (num_labels,))

    @staticmethod
    def _penalty(allowed, shape):
        if allowed is None:
            return np.zeros(shape, np.float32)
        allowed = np.asarray(allowed, bool)
        if allowed.shape != shape:
            raise ValueError(f"constraint shape {allowed.shape}, expected "
                             f"{shape}")
        return np.where(allowed, 0.0, FORBIDDEN).astype(np.float32)

    def build(self, input_shape):
        init = keras.initializers.Zeros()
        self.transitions = self.add_weight(
            name="transitions", shape=(self.num_labels, self.num_labels),
            initializer=init)
        self.start_scores = self.add_weight(
            name="start_scores", shape=(self.num_labels,), initializer=init)
        self.end_scores = self.add_weight(
            name="end_scores", shape=(self.num_labels,), initializer=init)
        self.built = True

    def call(self, emissions):
        return emissions

    def compute_output_shape(self, input_shape):
        return input_shape

    def _constrained_transitions(self):
        return ops.convert_to_tensor(self.transitions) + self._transition_penalty

    def log_likelihood(self, emissions, tags, lengths):
        """log p(tags | emissions) per sequence.

        Args:
          emissions: float32 [batch, n, L].
          tags: int [batch, n]; positions >= length are ignored.
          lengths: int [batch], 0 <= length <= n; a length-0 sequence has
            log-likelihood 0.

        Returns:
          float32 [batch].
        """
        emissions = ops.cast(emissions, "float32")
        tags = ops.cast(tags, "int32")
        lengths = ops.cast(lengths, "int32")
        mask = ops.cast(_sequence_mask(lengths, ops.shape(emissions)[1]),
                        "float32")
        transitions = self._constrained_transitions()
        start = ops.convert_to_tensor(self.start_scores)
        end = ops.convert_to_tensor(self.end_scores)

        # Gold path score.
        safe_tags = ops.where(mask > 0, tags, 0)
        emitted = ops.take_along_axis(emissions, safe_tags[..., None],
                                      axis=2)[..., 0]
        gold = ops.sum(emitted * mask, axis=1)
        moves = ops.take(ops.reshape(transitions, (-1,)),
                         safe_tags[:, :-1] * self.num_labels + safe_tags[:, 1:])
        gold += ops.sum(moves * mask[:, 1:], axis=1)
        last = ops.maximum(lengths - 1, 0)
        gold += ops.take(start, safe_tags[:, 0])
        gold += ops.take(end, ops.take_along_axis(safe_tags, last[:, None],
                                                  axis=1)[:, 0])

        # Forward algorithm: alpha[b, j] = log-sum of all prefixes ending in j.
        def step(alpha, inputs):
            emission, step_mask = inputs[..., :-1], inputs[..., -1]
            candidate = ops.logsumexp(
                alpha[:, :, None] + transitions[None], axis=1) + emission
            alpha = ops.where(step_mask[:, None] > 0, candidate, alpha)
            return alpha, alpha

        alpha, _ = ops.scan(step, start[None] + emissions[:, 0],
                            _time_major_steps(emissions, mask))
        log_partition = ops.logsumexp(alpha + end[None], axis=1)
        nonempty = ops.cast(lengths > 0, "float32")
        return (gold - log_partition) * nonempty

    def decode(self, emissions, lengths):
        """Viterbi: the highest-scoring allowed tag sequence.

        Args:
          emissions: float32 [batch, n, L].
          lengths: int [batch].

        Returns:
          int32 [batch, n]; positions >= length hold 0.
        """
        emissions = ops.cast(emissions, "float32")
        mask = _sequence_mask(ops.cast(lengths, "int32"),
                              ops.shape(emissions)[1])
        transitions = self._constrained_transitions()
        score0 = (ops.convert_to_tensor(self.start_scores)
                  + self._start_penalty)[None] + emissions[:, 0]
        identity = ops.arange(self.num_labels, dtype="int32")

        def step(carry, inputs):
            score, _ = carry
            emission, step_mask = inputs[..., :-1], inputs[..., -1] > 0
            candidate = score[:, :, None] + transitions[None]
            best_previous = ops.cast(ops.argmax(candidate, axis=1), "int32")
            new_score = ops.max(candidate, axis=1) + emission
            keep = step_mask[:, None]
            # Past the end the path stays put, so backtracking passes through.
            carry = (ops.where(keep, new_score, score),
                     ops.where(keep, best_previous, identity[None]))
            return carry, carry

        (final, _), (_, backpointers) = ops.scan(
            step, (score0, ops.zeros_like(score0, "int32")),
            _time_major_steps(emissions, mask))
        final += ops.convert_to_tensor(self.end_scores)[None]
        last_tag = ops.cast(ops.argmax(final, axis=1), "int32")

        def back(tag, pointers):
            tag = ops.take_along_axis(pointers, tag[:, None], axis=1)[:, 0]
            return tag, tag

        _, earlier = ops.scan(back, last_tag, backpointers, reverse=True)
        tags = ops.concatenate([ops.transpose(earlier), last_tag[:, None]],
                               axis=1)
        return ops.where(mask, tags, 0)

    def get_config(self):
        config = super().get_config()
        config.update(num_labels=self.num_labels,
                      allowed_transitions=self.allowed_transitions,
                      allowed_start=self.allowed_start)
        return config


def _time_major_steps(emissions, mask):
    """float32 [n - 1, batch, L + 1]: positions 1..n-1 of the emissions with
    the mask as a last channel.

    One tensor, not a tuple: Keras's TensorFlow `scan` fails on several
    inputs whose length is unknown at trace time (as in a serving graph).
    """
    steps = ops.concatenate(
        [emissions[:, 1:], ops.cast(mask[:, 1:, None], "float32")], axis=-1)
    return ops.transpose(steps, (1, 0, 2))


def _sequence_mask(lengths, n):
    """bool [batch, n]: position < length."""
    return ops.arange(n, dtype="int32")[None] < lengths[:, None]


def compact(values, keep):
    """Moves the kept positions of each row to its front, in order.

    Args:
      values: [batch, seq, ...].
      keep: bool [batch, seq].

    Returns:
      `(compacted, lengths)`: same shape as `values` (positions >= length
      hold arbitrary values) and int32 [batch] counts of kept positions.
    """
    shape = ops.shape(values)
    batch, seq = shape[0], shape[1]
    positions = ops.arange(seq, dtype="int32")[None]
    # Kept positions first, each group in order: the keys are distinct, so
    # any sort gives the same order.
    order = ops.argsort(ops.where(keep, positions, positions + seq), axis=1)
    rows = ops.arange(batch, dtype="int32")[:, None] * seq
    flat = ops.reshape(values, (-1,) + tuple(shape[2:]))
    return (ops.take(flat, ops.cast(order, "int32") + rows, axis=0),
            ops.sum(ops.cast(keep, "int32"), axis=1))
