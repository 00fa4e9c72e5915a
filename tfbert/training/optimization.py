"""AdamW with BERT's schedule: linear warmup, linear decay to zero."""

import re

import keras
from keras import ops

# Variables whose name contains one of these are not weight-decayed:
# LayerNorm scales and offsets, and every bias (BERT's exclusion list).
NO_DECAY_NAMES = ("gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="tfbert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`peak * step / warmup_steps` during warmup, then linear decay from
    `peak` to 0 at `total_steps`."""

    def __init__(self, peak_learning_rate, total_steps, warmup_steps):
        self.peak_learning_rate = peak_learning_rate
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps

    def __call__(self, step):
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
                "warmup_steps": self.warmup_steps}


_LAYER_INDEX = re.compile(r"transformer_block_(\d+)/")


@keras.saving.register_keras_serializable(package="tfbert")
class LayerwiseDecayAdamW(keras.optimizers.AdamW):
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

    Keras AdamW (decoupled weight decay; note Keras applies Adam bias
    correction and epsilon 1e-7 where the original BERT optimizer used neither
    and 1e-6) with weight decay excluded from LayerNorm and bias variables,
    warmup then linear decay, global-norm clipping and optional gradient
    accumulation and layer-wise learning-rate decay.

    Args:
      learning_rate: peak learning rate.
      total_steps: optimizer steps of the whole run (after accumulation).
      warmup_steps: steps of linear warmup.
      weight_decay: decoupled weight-decay rate.
      clip_norm: global gradient-norm clip; None to disable.
      epsilon: Adam epsilon. Keras adds it to sqrt(v) before bias
        correction, so early in training it weighs more than the same value
        in PyTorch's AdamW.
      gradient_accumulation_steps: batches whose gradients are averaged per
        update.
      layerwise_decay: if set, per-layer learning-rate factor (e.g. 0.9);
        needs `num_layers`.
    """
    kwargs = dict(
        learning_rate=WarmupLinearDecay(learning_rate, total_steps,
                                        warmup_steps),
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
        optimizer = keras.optimizers.AdamW(**kwargs)
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    return optimizer
