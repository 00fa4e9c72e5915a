"""AdamW with BERT's schedule: linear warmup, linear decay to zero."""

import contextlib
import re

import keras
import tensorflow as tf
from keras import ops

from tfbert_config.bounds import check_bounds

# Variables whose name contains one of these are not weight-decayed:
# LayerNorm scales and offsets, and every bias (BERT's exclusion list).
NO_DECAY_NAMES = ("gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="tfbert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`peak * step / warmup_steps` during warmup, then linear decay from
    `peak` to 0 at `total_steps`.

    Steps are optimizer updates. Keras calls a schedule with the number of
    batches seen, which with gradient accumulation is
    `batches_per_update` times larger: it is divided back here, so an
    accumulated run follows the schedule of the large-batch run it stands
    for."""

    def __init__(self, peak_learning_rate, total_steps, warmup_steps,
                 batches_per_update=1):
        self.peak_learning_rate = peak_learning_rate
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps
        self.batches_per_update = batches_per_update

    def __call__(self, step):
        step = ops.floor_divide(step, self.batches_per_update)
        step = ops.cast(step, "float32")
        warmup = float(self.warmup_steps)
        total = float(max(self.total_steps, 1))
        decaying = self.peak_learning_rate * ops.maximum(
            0.0, (total - step) / max(total - warmup, 1.0))
        if not self.warmup_steps:
            return decaying
        warming = self.peak_learning_rate * step / warmup
        return ops.where(step < warmup, warming, decaying)

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate,
                "total_steps": self.total_steps,
                "warmup_steps": self.warmup_steps,
                "batches_per_update": self.batches_per_update}


class _PerUpdateValues:
    """Values computed once per optimizer update and reused for every
    variable: a cache that lives for one `scope()` (one update), keyed by
    the graph being built (a tf.cond branch is a graph of its own), a name
    and a dtype. Outside a scope nothing is kept."""

    def __init__(self):
        self._values = None

    @contextlib.contextmanager
    def scope(self):
        self._values = {}
        try:
            yield
        finally:
            self._values = None

    def get(self, name, dtype, compute):
        # One read of the dict: a MirroredStrategy traces its replicas'
        # updates in threads of their own, each entering the scope.
        values = self._values
        if values is None:
            return compute()
        key = (tf.compat.v1.get_default_graph(), name, dtype)
        if key not in values:
            values[key] = compute()
        return values[key]


@keras.saving.register_keras_serializable(package="tfbert")
class AdamW(keras.optimizers.AdamW):
    """Keras AdamW with epsilon added to the bias-corrected `sqrt(v_hat)`, the
    update of PyTorch's `torch.optim.AdamW` (and so of HF fine-tuning):

        variable -= lr * m_hat / (sqrt(v_hat) + epsilon)

    Keras adds epsilon to the uncorrected `sqrt(v)` instead, which is the same
    as an epsilon `1 / sqrt(1 - beta_2 ** t)` times larger: ~32x at step 1,
    ~3x at step 100. In a short fine-tuning run that damps every parameter
    whose gradient is small (the attention query/key weights moved about half
    as far as PyTorch's in the first steps of a SQuAD run). Decoupled weight
    decay is Keras's (`variable -= lr * weight_decay * variable`), as in
    PyTorch.

    Gradients that arrive as `tf.IndexedSlices` (embedding lookups) are made
    dense first. Keras's update rules and global-norm clipping apply ops per
    slice, which is wrong when an index repeats, as every frequent token and
    both segment ids do in a batch: `m += (g - m) * (1 - beta_1)` then
    subtracts `m` once per occurrence, so the moments of those rows diverge,
    and the global norm adds squares of the parts instead of squaring their
    sum.
    """

    def __init__(self, **kwargs):
        if kwargs.get("amsgrad"):
            raise ValueError("tfbert's AdamW does not implement amsgrad")
        super().__init__(**kwargs)
        self._per_update = _PerUpdateValues()

    def apply(self, grads, trainable_variables=None):
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices)
                 else g for g in grads]
        return super().apply(grads, trainable_variables)

    def _backend_apply_gradients(self, grads, trainable_variables):
        # Keras evaluates the learning rate (the schedule's ops) for every
        # variable's weight decay, and the bias corrections depend only on
        # the step: within one update each is computed once per graph and
        # dtype, so a traced train step holds far fewer optimizer ops (the
        # same values: the same ops on the same inputs).
        with self._per_update.scope():
            return super()._backend_apply_gradients(grads,
                                                    trainable_variables)

    def _get_current_learning_rate(self):
        return self._per_update.get(
            "learning_rate", None, super()._get_current_learning_rate)

    def _bias_corrections(self, dtype):
        """`(1 - beta_1 ** t, 1 - beta_2 ** t)` in `dtype` at update `t`."""
        def compute():
            step = ops.cast(self.iterations + 1, dtype)
            return (1 - ops.power(ops.cast(self.beta_1, dtype), step),
                    1 - ops.power(ops.cast(self.beta_2, dtype), step))
        return self._per_update.get("bias_corrections", dtype, compute)

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = ops.cast(learning_rate, dtype)
        gradient = ops.cast(gradient, dtype)
        m_correction, v_correction = self._bias_corrections(dtype)
        index = self._get_variable_index(variable)
        m = self._momentums[index]
        v = self._velocities[index]
        self.assign_add(m, (gradient - m) * (1 - self.beta_1))
        self.assign_add(v, (ops.square(gradient) - v) * (1 - self.beta_2))
        denominator = ops.sqrt(v / v_correction) + self.epsilon
        self.assign_sub(variable, lr * (m / m_correction) / denominator)


_LAYER_INDEX = re.compile(r"transformer_block_(\d+)/")


@keras.saving.register_keras_serializable(package="tfbert")
class LayerwiseDecayAdamW(AdamW):
    """AdamW whose learning rate shrinks by `layerwise_decay` per layer below
    the top: the head gets the full rate, block i of L gets
    `decay ** (L - i)`, the embeddings `decay ** (L + 1)`."""

    def __init__(self, layerwise_decay, num_layers, **kwargs):
        super().__init__(**kwargs)
        self.layerwise_decay = layerwise_decay
        self.num_layers = num_layers

    def learning_rate_multiplier(self, variable):
        """The factor for a model variable (by its Keras path)."""
        path = variable.path
        match = _LAYER_INDEX.search(path)
        if match:
            depth = self.num_layers - int(match.group(1))
        elif "embeddings/" in path:
            depth = self.num_layers + 1
        else:
            depth = 0
        return self.layerwise_decay ** depth

    def build(self, var_list):
        super().build(var_list)
        # update_step sees backend variables without Keras paths: key the
        # factors by the optimizer's own variable key.
        self._multipliers = {self._var_key(v): self.learning_rate_multiplier(v)
                             for v in var_list}

    def update_step(self, gradient, variable, learning_rate):
        super().update_step(
            gradient, variable,
            learning_rate * self._multipliers[self._var_key(variable)])

    def get_config(self):
        config = super().get_config()
        config.update(layerwise_decay=self.layerwise_decay,
                      num_layers=self.num_layers)
        return config


def create_optimizer(learning_rate, total_steps, warmup_steps,
                     weight_decay=0.01, clip_norm=1.0, epsilon=1e-6,
                     gradient_accumulation_steps=1, layerwise_decay=None,
                     num_layers=None):
    """Returns BERT's fine-tuning optimizer.

    `AdamW` (decoupled weight decay, PyTorch's epsilon placement; the original
    BERT optimizer had no bias correction) with weight decay excluded from
    LayerNorm and bias variables,
    warmup then linear decay, global-norm clipping and optional gradient
    accumulation and layer-wise learning-rate decay.

    Args:
      learning_rate: peak learning rate.
      total_steps: optimizer updates of the whole run (batches divided by
        `gradient_accumulation_steps`).
      warmup_steps: updates of linear warmup.
      weight_decay: decoupled weight-decay rate.
      clip_norm: global gradient-norm clip; None to disable.
      epsilon: Adam epsilon, added to the bias-corrected sqrt(v) as in
        PyTorch.
      gradient_accumulation_steps: batches whose gradients are averaged per
        update.
      layerwise_decay: if set, per-layer learning-rate factor (e.g. 0.9);
        needs `num_layers`.

    Raises:
      ParameterError: `learning_rate` is not in (0, 1] or `clip_norm` is
        not a finite positive number.
    """
    check_bounds("learning_rate", learning_rate, 0, 1, low_open=True)
    if clip_norm is not None:
        check_bounds("clip_norm", clip_norm, 0, low_open=True)
    kwargs = dict(
        learning_rate=WarmupLinearDecay(learning_rate, total_steps,
                                        warmup_steps,
                                        gradient_accumulation_steps),
        weight_decay=weight_decay, beta_1=0.9, beta_2=0.999, epsilon=epsilon,
        global_clipnorm=clip_norm,
        gradient_accumulation_steps=(gradient_accumulation_steps
                                     if gradient_accumulation_steps > 1
                                     else None))
    if layerwise_decay:
        if not num_layers:
            raise ValueError("layerwise_decay needs num_layers")
        optimizer = LayerwiseDecayAdamW(layerwise_decay, num_layers, **kwargs)
    else:
        optimizer = AdamW(**kwargs)
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    return optimizer
