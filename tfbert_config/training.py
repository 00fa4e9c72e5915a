"""`TrainingConfig`: how to train, checked when made (plain Python)."""

import dataclasses

from tfbert_config.bounds import check_bounds

# More passes than any training run makes: a larger value is a mistake.
MAX_EPOCHS = 100_000


@dataclasses.dataclass
class TrainingConfig:
    """How to train.

    Every number must be finite and within its bounds (`ParameterError`
    naming the attribute otherwise): values outside them cannot be meant.

    Attributes:
      model_dir: checkpoints, TensorBoard logs and results go here.
      num_train_epochs: passes over the training set (may be fractional),
        in (0, `MAX_EPOCHS`].
      learning_rate: peak learning rate, in (0, 1].
      warmup_proportion: fraction of steps with linear warmup, in [0, 1].
      weight_decay: AdamW decoupled weight decay, in [0, 1].
      adam_epsilon: Adam epsilon, in (0, 1].
      gradient_accumulation_steps: batches whose mean gradient makes one
        optimizer update (warmup and decay count updates).
      layerwise_lr_decay: per-layer learning-rate factor in (0, 1], or
        None.
      checkpoint_steps: batches between checkpoints; None = once per epoch.
      jit_compile: XLA-compile the train step (the model only; tokenization
        runs in tf.data, outside XLA).
      steps_per_execution: batches per `tf.function` call.
      seed: seed of the dropout random streams: `train` reseeds every
        dropout layer from it before training starts, so dropout does not
        depend on how many models or layers were built before. Weight
        initialization and data shuffling are the caller's to seed
        (`keras.utils.set_random_seed`, `Dataset.shuffle(seed=...)`).
      verbose: progress output (`tfbert.training.progress`): 0 none, 1 a
        bar per epoch, 2 log lines; "auto": a bar on a terminal, else lines.
    """

    model_dir: str
    num_train_epochs: float = 3.0
    learning_rate: float = 5e-5
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    adam_epsilon: float = 1e-6
    gradient_accumulation_steps: int = 1
    layerwise_lr_decay: float | None = None
    checkpoint_steps: int | None = None
    jit_compile: bool = False
    steps_per_execution: int = 1
    seed: int = 42
    verbose: str | int = "auto"

    def __post_init__(self):
        check_bounds("num_train_epochs", self.num_train_epochs, 0,
                     MAX_EPOCHS, low_open=True)
        check_bounds("learning_rate", self.learning_rate, 0, 1, low_open=True)
        check_bounds("warmup_proportion", self.warmup_proportion, 0, 1)
        check_bounds("weight_decay", self.weight_decay, 0, 1)
        check_bounds("adam_epsilon", self.adam_epsilon, 0, 1, low_open=True)
        if self.layerwise_lr_decay is not None:
            check_bounds("layerwise_lr_decay", self.layerwise_lr_decay, 0, 1,
                         low_open=True)
        for name in ("gradient_accumulation_steps", "steps_per_execution",
                     "checkpoint_steps"):
            if getattr(self, name) is not None:
                check_bounds(name, getattr(self, name), 1)
