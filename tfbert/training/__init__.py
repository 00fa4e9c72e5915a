"""Training plumbing shared by every task: optimizer, precision,
distribution, resumable `fit`, best-model files, model-dir state."""

from tfbert.training.best_model import restore_best_weights
from tfbert_config.training import MAX_EPOCHS, TrainingConfig
from tfbert.training.distillation import TaskDistillationLoss
from tfbert.training.distribution import get_strategy, split_cpu
from tfbert.training.layer_transfer import LayerTransfer
from tfbert.training.optimization import (
    NO_DECAY_NAMES, AdamW, LayerwiseDecayAdamW, WarmupLinearDecay,
    create_optimizer)
from tfbert.training.precision import set_mixed_precision
from tfbert.training.run_state import (
    ModelDirLock, ModelDirLockedError, ModelDirMismatchError,
    check_fingerprint, clear_training_state, file_fingerprint)
from tfbert.training.trainer import (
    TrainingDivergedError, TrainingInterrupted, is_chief,
    restore_trained_weights, train)
