"""The task runner: the lifecycle every task shares, written once.

    flags -> checks -> strategy -> data -> model -> train (resume, best
    model) -> evaluate -> predict -> export

A task (`Task` subclass: GLUE, SQuAD, NER, pretraining) supplies only what is
its own: its flags, reading its files, its model and loss, its metrics, how
it writes predictions and what it exports. `main(TaskClass)` is the whole
command-line program of a task:

    python -m tasks.glue --task=sst2 --data_dir=DIR --model_dir=DIR --do_train

Every user mistake (a bad flag value, a missing or malformed file, a
checkpoint that does not fit) is found before training starts and ends the
program with a one-line message and exit status 2; see `run`.
"""

import contextlib
import dataclasses
import json
import os
import sys
import tempfile
import warnings

from absl import app, flags, logging

from tfbert.export.serving_module import FEED_FORWARD_SHARDS, RequestLimits
from tfbert.utils.quiet import quiet_tensorflow_start

FLAGS = flags.FLAGS

# Shared flags a task may leave out (every other shared flag is offered by
# every task).
OPTIONAL_FLAGS = frozenset({"do_predict", "pad_to_max_length",
                            "max_train_examples", "max_eval_examples",
                            "max_predict_examples", "export_token_ids_only",
                            "export_precision", "export_constant_kernels",
                            "export_feed_forward_shards",
                            "export_max_text_chars", "export_max_batch_chars",
                            "export_max_windows", "classifier_dropout"})

# Shared flags that change what training computes; a model directory resumes
# only a run whose values of these (and whose data) are unchanged.
_TRAINING_FLAGS = (
    "init_checkpoint", "vocab_file", "max_seq_length", "pad_to_max_length",
    "train_batch_size", "learning_rate", "num_train_epochs",
    "warmup_proportion", "weight_decay", "adam_epsilon",
    "gradient_accumulation_steps", "layerwise_lr_decay", "checkpoint_steps",
    "mixed_precision", "seed", "max_train_examples", "classifier_dropout")


class UserError(ValueError):
    """A mistake in the command line or the input files: reported as one
    line, without a traceback."""


class Task:
    """What a task supplies to the runner.

    Class attributes:
      name: the task's command name (`glue` -> `tfbert-glue`).
      defaults: defaults of shared flags that this recipe changes, e.g.
        `{"max_seq_length": 384}`.
      optional_flags: the `OPTIONAL_FLAGS` this task offers (all by
        default).
      training_flags: names of the task's own flags that change training
        (part of the model directory's fingerprint).

    An instance is made after flag parsing with the parsed `FlagValues`. The
    runner calls, in order: `check` (pure Python: flag combinations, reading
    every input file the run will need), `build_inputs` (tokenizer /
    preprocessor and datasets; TF ops may run), `build_model` (inside the
    strategy scope), then `train_dataset`/`compile_args` (with --do_train),
    `evaluate`, `write_predictions` and `export`.
    """

    name = ""
    defaults = {}
    optional_flags = OPTIONAL_FLAGS
    training_flags = ()

    def __init__(self, flag_values):
        self.flags = flag_values

    @staticmethod
    def define_flags(fv):
        """Defines the task's own flags in the `FlagValues` `fv`."""

    def minimum_seq_length(self):
        """The shortest --max_seq_length the task can use."""
        return 3

    def check(self):
        """Checks flag combinations and reads every file the run will need;
        raises `ValueError`/`OSError` naming the flag or file:line."""

    def training_files(self):
        """Paths whose contents training depends on (fingerprinted)."""
        return []

    def build_inputs(self, preprocessor):
        """Builds what the model and datasets need from the checkpoint
        family's `preprocessor` (`load_preprocessor`): its `tokenizer`,
        its `layout` of special tokens, and packing of raw text."""

    def build_model(self, init_checkpoint):
        """The task's Keras model on the encoder of `init_checkpoint`."""
        raise NotImplementedError

    def train_dataset(self):
        """`(dataset, batches_per_epoch)`: one epoch of training batches."""
        raise NotImplementedError

    def compile_args(self):
        """`loss`, `metrics`, `loss_weights` for `Model.compile`."""
        raise NotImplementedError

    @property
    def main_metric(self):
        """The dev metric (higher is better) that selects the best model, or
        None when the run has no evaluation data."""
        return None

    def evaluate(self, model):
        """`(main_metrics, all_results)`: metrics of the split that selects
        the best model, and everything written to eval_results.json."""
        raise NotImplementedError

    def write_eval_details(self, output_dir):
        """Writes what the last `evaluate` saw beyond its metrics (e.g. the
        predicted tags) under `output_dir`; nothing by default."""

    def write_predictions(self, model, output_dir):
        """Writes predictions for the --do_predict data under `output_dir`."""
        raise NotImplementedError

    def serving_module(self, model):
        """The `tfbert.export` serving module of the trained `model`."""
        raise NotImplementedError

    def export(self, model, export_dir, token_ids_only):
        """Exports the trained model; returns the path written. By default a
        TF Serving SavedModel of `serving_module` (only its token-id
        signature with `token_ids_only`), computing in the precision of
        --export_precision (with --export_constant_kernels, bfloat16
        kernels as graph constants), its feed-forward layers stored as
        --export_feed_forward_shards column shards, refusing requests over
        --export_max_text_chars, --export_max_batch_chars and
        --export_max_windows."""
        from tfbert.export import export_task_model

        f = self.flags
        precision = (f.export_precision if "export_precision" in f
                     else "float32")
        constant_kernels = ("export_constant_kernels" in f
                            and f.export_constant_kernels)
        shards = (f.export_feed_forward_shards
                  if "export_feed_forward_shards" in f and not constant_kernels
                  else None)
        limits = RequestLimits(**{
            name: f[f"export_{name}"].value
            for name in ("max_text_chars", "max_batch_chars", "max_windows")
            if f"export_{name}" in f})
        return export_task_model(
            model, export_dir, self.serving_module, precision=precision,
            token_ids_only=token_ids_only, constant_kernels=constant_kernels,
            feed_forward_shards=shards, limits=limits)


def define(fv, specs):
    """Defines flags in the `FlagValues` `fv` from specs
    `(kind, name, default, help)` (kind: string, bool, integer, float, list)
    or `("enum", name, default, help, values)`."""
    for kind, name, default, help_text, *values in specs:
        define_fn = getattr(flags, f"DEFINE_{kind}")
        define_fn(name, default, *values, help_text, flag_values=fv)


# The shared flags, as `define` specs; a task changes their defaults with
# `Task.defaults`.
_SHARED_FLAGS = (
    ("string", "init_checkpoint", "minilm-l6-h384-uncased",
     "Preset name or checkpoint directory to start from."),
    ("string", "vocab_file", None,
     "vocab.txt to use instead of the checkpoint's (for checkpoints that "
     "have none)."),
    ("bool", "do_lower_case", True,
     "Lower-case text; read only with --vocab_file."),
    ("string", "model_dir", None, "Checkpoints, logs and results (required)."),
    ("bool", "overwrite_model_dir", False,
     "Start training afresh, deleting the training state already in "
     "--model_dir."),
    ("string", "export_dir", None,
     "Export the trained model under this directory."),
    ("bool", "export_best", True,
     "Evaluate, predict and export with the weights that scored best on the "
     "dev data during training (when there was dev data); otherwise the "
     "last weights."),
    ("bool", "do_train", False, "Train."),
    ("bool", "do_eval", False, "Evaluate on the dev data."),
    ("bool", "do_predict", False, "Write test-set predictions."),
    ("bool", "export_token_ids_only", False,
     "Export only the token-id signature (servers without tensorflow-text "
     "ops)."),
    ("enum", "export_precision", "float32",
     "Precision the exported SavedModel computes in: bfloat16 runs the "
     "matmuls in bfloat16 and stores the weights in bfloat16 (LayerNorm, "
     "softmax and logits stay float32).", ["float32", "bfloat16"]),
    ("bool", "export_constant_kernels", False,
     "With --export_precision=bfloat16: store the Dense kernels as graph "
     "constants: faster on CPUs with AMX, but the server needs more memory "
     "(docs/serving.md)."),
    ("integer", "export_feed_forward_shards", FEED_FORWARD_SHARDS,
     "Column shards each transformer block's feed-forward layer is exported "
     "as (1: whole): on a small batch TensorFlow runs the shards' matmuls "
     "side by side on the server's cores; the best count depends on that "
     "machine (docs/serving.md). "
     "Not with --export_constant_kernels (its kernels stay whole)."),
    ("integer", "export_max_text_chars", RequestLimits.max_text_chars,
     "The export refuses a request holding a text of more characters "
     "(Unicode code points) than this (docs/serving.md)."),
    ("integer", "export_max_batch_chars", RequestLimits.max_batch_chars,
     "The export refuses a request whose texts hold more characters "
     "together than this."),
    ("integer", "export_max_windows", RequestLimits.max_windows,
     "The export refuses a request that needs more encoder windows than "
     "this: one per example for a classifier, one per window of each long "
     "text for SQuAD and NER, one per row of serve_token_ids."),
    ("integer", "max_seq_length", 128, "Longest packed input, in tokens."),
    ("bool", "pad_to_max_length", False,
     "Pad every batch to max_seq_length (fixed shapes for TPU/XLA) instead "
     "of to its longest sequence."),
    ("integer", "train_batch_size", 32, "Global training batch size."),
    ("integer", "eval_batch_size", 64,
     "Global evaluation/prediction batch size."),
    ("float", "learning_rate", 5e-5, "Peak learning rate."),
    ("float", "num_train_epochs", 3.0, "Training epochs (may be fractional)."),
    ("float", "warmup_proportion", 0.1, "Fraction of steps of linear warmup."),
    ("float", "weight_decay", 0.01, "AdamW weight decay."),
    ("float", "adam_epsilon", 1e-6, "Adam epsilon."),
    ("integer", "gradient_accumulation_steps", 1,
     "Batches per optimizer update."),
    ("float", "layerwise_lr_decay", None,
     "Per-layer learning-rate decay factor (e.g. 0.9)."),
    ("integer", "checkpoint_steps", None,
     "Batches between checkpoints (default: one epoch)."),
    ("enum", "mixed_precision", "none", "Mixed precision policy.",
     ["none", "float16", "bfloat16"]),
    ("enum", "distribution_strategy", "one_device", "tf.distribute strategy.",
     ["one_device", "mirrored", "multi_worker_mirrored", "tpu"]),
    ("string", "tpu", None,
     "TPU address for --distribution_strategy=tpu (default: the local TPU "
     "VM)."),
    ("integer", "num_gpus", None,
     "GPUs for --distribution_strategy=mirrored (default: all)."),
    ("bool", "jit_compile", False, "XLA-compile the model's train step."),
    ("integer", "steps_per_execution", 1, "Batches per tf.function call."),
    ("integer", "seed", 42, "Seed for weights, dropout and shuffling."),
    ("integer", "max_train_examples", 0,
     "Train on the first N examples only (0 = all)."),
    ("integer", "max_eval_examples", 0,
     "Evaluate on the first N examples of each dev file only (0 = all)."),
    ("integer", "max_predict_examples", 0,
     "Predict the first N examples of each test file only (0 = all)."),
    ("float", "classifier_dropout", 0.1,
     "Dropout rate before the task's classification head."),
)


def define_flags(task_class, fv=FLAGS):
    """Defines the shared flags the task offers, with its defaults, then the
    task's own."""
    offered = [
        (kind, name, task_class.defaults.get(name, default), *rest)
        for kind, name, default, *rest in _SHARED_FLAGS
        if name not in OPTIONAL_FLAGS or name in task_class.optional_flags]
    define(fv, offered)
    task_class.define_flags(fv)


def check_flags(task):
    """The checks on flag values that need no file; raises UserError."""
    f = task.flags

    def require(condition, message):
        if not condition:
            raise UserError(message)

    require(f.model_dir, "--model_dir is required")
    actions = [f.do_train, f.do_eval, bool(f.export_dir),
               f["do_predict"].value if "do_predict" in f else False]
    require(any(actions), "nothing to do: pass --do_train, --do_eval"
            + (", --do_predict" if "do_predict" in f else "")
            + " or --export_dir")
    require(f.max_seq_length >= task.minimum_seq_length(),
            f"--max_seq_length={f.max_seq_length} is too short for this task "
            f"(at least {task.minimum_seq_length()})")
    for name in ("train_batch_size", "eval_batch_size"):
        require(f[name].value > 0, f"--{name} must be positive, got "
                f"{f[name].value}")
    training_config(task)  # Its bounds, named as flags.
    for split in ("train", "eval", "predict"):
        name = f"max_{split}_examples"
        if name in f:
            require(f[name].value >= 0, f"--{name} must be >= 0 (0 = all), "
                    f"got {f[name].value}")
    if "export_constant_kernels" in f:
        require(not f.export_constant_kernels
                or f.export_precision == "bfloat16",
                "--export_constant_kernels is read only with "
                "--export_precision=bfloat16")
    if "export_feed_forward_shards" in f:
        require(f.export_feed_forward_shards >= 1,
                "--export_feed_forward_shards must be >= 1, got "
                f"{f.export_feed_forward_shards}")
        require(not (f["export_feed_forward_shards"].present
                     and "export_constant_kernels" in f
                     and f.export_constant_kernels),
                "--export_feed_forward_shards is read only without "
                "--export_constant_kernels (constant kernels stay whole)")
    for name in ("export_max_text_chars", "export_max_batch_chars",
                 "export_max_windows"):
        if name in f:
            require(f[name].value >= 1,
                    f"--{name} must be >= 1, got {f[name].value}")
    require(f.tpu is None or f.distribution_strategy == "tpu",
            "--tpu is read only with --distribution_strategy=tpu")
    require(f.num_gpus is None or f.distribution_strategy in (
        "one_device", "mirrored"), "--num_gpus is read only with "
            "--distribution_strategy=one_device or mirrored")
    require(not f["do_lower_case"].present or f.vocab_file,
            "--do_lower_case is read only with --vocab_file")
    if f.vocab_file and not os.path.isfile(f.vocab_file):
        raise UserError(f"--vocab_file={f.vocab_file}: no such file")


def first_examples(flag_values, split, examples):
    """`examples` (a list, or None) cut to the first --max_{split}_examples
    (`split`: "train", "eval" or "predict") when the task offers that flag
    and it is not 0."""
    name = f"max_{split}_examples"
    limit = flag_values[name].value if name in flag_values else 0
    return examples[:limit] if limit and examples else examples


def training_config(task):
    """The `TrainingConfig` the flags describe; a value out of its bounds is
    a `UserError` naming the flag."""
    from tfbert.training.config import TrainingConfig
    from tfbert.utils.bounds import ParameterError

    f = task.flags
    try:
        return TrainingConfig(
            model_dir=f.model_dir, num_train_epochs=f.num_train_epochs,
            learning_rate=f.learning_rate,
            warmup_proportion=f.warmup_proportion,
            weight_decay=f.weight_decay, adam_epsilon=f.adam_epsilon,
            gradient_accumulation_steps=f.gradient_accumulation_steps,
            layerwise_lr_decay=f.layerwise_lr_decay,
            checkpoint_steps=f.checkpoint_steps, jit_compile=f.jit_compile,
            steps_per_execution=f.steps_per_execution, seed=f.seed)
    except ParameterError as error:
        # The config's parameters are named as their flags.
        raise UserError(f"--{error.parameter} must be {error.bounds}, got "
                        f"{error.value}") from None


def check_output_location(flag, path):
    """Refuses (`UserError` naming `--flag`) an output directory that cannot
    be made or written: a file, a path under a file, a read-only directory
    or file system. Creates nothing that stays: the nearest existing
    directory is probed with a temporary file (permission bits alone do not
    tell, e.g. for root or on a read-only mount)."""
    target = os.path.abspath(path)
    existing = target
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        where = "" if existing == target else f"{existing} "
        raise UserError(f"--{flag}={path}: {where}is a file, not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".tfbert-write-check-",
                                     dir=existing)
    except OSError as error:
        raise UserError(f"--{flag}={path}: {existing} is not writable "
                        f"({error.strerror})") from None
    os.close(fd)
    os.remove(probe)


def load_preprocessor(flag_values):
    """The preprocessor of --vocab_file (WordPiece, BERT's packing), else
    the one of the --init_checkpoint's family (`Preprocessor.from_pretrained`:
    WordPiece, byte-level BPE or SentencePiece, and the family's packing),
    packing to --max_seq_length, each batch padded to its longest row."""
    from tfbert.text import BertPreprocessor, BertTokenizer, Preprocessor
    from tfbert.text.bert_tokenizer import NoVocabularyError

    settings = dict(seq_length=flag_values.max_seq_length,
                    pad_to_seq_length=False)
    if flag_values.vocab_file:
        return BertPreprocessor(
            BertTokenizer(flag_values.vocab_file,
                          lowercase=flag_values.do_lower_case), **settings)
    try:
        return Preprocessor.from_pretrained(flag_values.init_checkpoint,
                                            **settings)
    except NoVocabularyError as error:
        raise UserError(f"--init_checkpoint={flag_values.init_checkpoint}: "
                        f"{error}; pass --vocab_file") from error
    except (ValueError, OSError) as error:
        raise UserError(f"--init_checkpoint={flag_values.init_checkpoint}: "
                        f"{error}") from error


def write_json(path, value):
    """Writes `value` as indented JSON, atomically."""
    from tfbert.utils.atomic import write_json_atomic

    write_json_atomic(path, value)


@dataclasses.dataclass
class Prepared:
    """What the lifecycle has built when training can start."""

    strategy: object
    model: object
    chief: bool


def _fingerprint(task):
    """The training flags and data that a model directory's state belongs
    to."""
    from tfbert.training import file_fingerprint

    f = task.flags
    names = [n for n in _TRAINING_FLAGS if n in f] + list(task.training_flags)
    values = {f"--{name}": f[name].value for name in names}
    values["data"] = {os.path.abspath(path): file_fingerprint(path)
                      for path in task.training_files()}
    return values


def _training_state_dir(f):
    """Where this process keeps its training state: --model_dir, except on
    the non-chief workers of a multi-worker run (MODEL_DIR/worker_tmp/<id>,
    as `tfbert.training.train` writes). Read from TF_CONFIG, since the
    strategy cannot be created yet."""
    if f.distribution_strategy != "multi_worker_mirrored":
        return f.model_dir
    try:
        config = json.loads(os.environ.get("TF_CONFIG", "{}"))
        kind, index = config["task"]["type"], int(config["task"]["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise UserError("--distribution_strategy=multi_worker_mirrored needs "
                        f"TF_CONFIG with a task type and index ({error})")
    chief = kind == "chief" or (kind == "worker" and index == 0
                                and "chief" not in config.get("cluster", {}))
    return (f.model_dir if chief
            else os.path.join(f.model_dir, "worker_tmp", str(index)))


def prepare(task, stack):
    """Everything before training. What fails here is the user's input."""
    import keras

    from tfbert.training import (
        ModelDirLock, check_fingerprint, clear_training_state, is_chief)
    from tfbert.training.distribution import get_strategy
    from tfbert.training.precision import set_mixed_precision

    f = task.flags
    check_flags(task)
    # Predictions go to --model_dir.
    for flag in ("model_dir", "export_dir"):
        if f[flag].value:
            check_output_location(flag, f[flag].value)
    task.check()
    os.makedirs(f.model_dir, exist_ok=True)
    state_dir = _training_state_dir(f)
    os.makedirs(state_dir, exist_ok=True)
    stack.enter_context(ModelDirLock(state_dir))
    if not f.do_train and not os.path.exists(
            os.path.join(state_dir, "checkpoints", "checkpoint")):
        raise UserError(f"--model_dir={f.model_dir} has no trained model; "
                        "run with --do_train first")
    # The strategy comes first: a multi-worker strategy must configure the
    # runtime before any op runs.
    with quiet_tensorflow_start():
        strategy = get_strategy(f.distribution_strategy, num_gpus=f.num_gpus,
                                tpu=f.tpu)
    keras.utils.set_random_seed(f.seed)
    set_mixed_precision(f.mixed_precision)
    task.build_inputs(load_preprocessor(f))
    with strategy.scope(), warnings_as_lines():
        model = task.build_model(f.init_checkpoint)
    positions = model.encoder.config.max_position_embeddings
    if f.max_seq_length > positions:
        raise UserError(f"--max_seq_length={f.max_seq_length} exceeds the "
                        f"{positions} positions of --init_checkpoint="
                        f"{f.init_checkpoint}")
    inner = model.encoder.config.intermediate_size
    if ("export_feed_forward_shards" in f
            and f.export_feed_forward_shards > inner):
        raise UserError(f"--export_feed_forward_shards="
                        f"{f.export_feed_forward_shards} exceeds the "
                        f"intermediate size {inner} of --init_checkpoint="
                        f"{f.init_checkpoint}")
    if f.do_train:
        # Last: the run is known to be valid before its state is touched.
        if f.overwrite_model_dir:
            clear_training_state(state_dir)
        check_fingerprint(state_dir, _fingerprint(task))
    return Prepared(strategy=strategy, model=model,
                     chief=is_chief(strategy))


def execute(task, prepared):
    """Train (or restore), then evaluate, predict and export."""
    from tfbert.training import (
        restore_best_weights, restore_trained_weights, train)

    f, model = task.flags, prepared.model
    if f.do_train:
        dataset, steps = task.train_dataset()
        def evaluate_fn():
            return task.evaluate(model)[0]
        train(model, dataset, steps_per_epoch=steps,
              config=training_config(task), strategy=prepared.strategy,
              evaluate_fn=(evaluate_fn if task.main_metric is not None
                           else None),
              best_metric=task.main_metric,
              **task.compile_args())
    else:
        restore_trained_weights(model, f.model_dir)
    if (f.export_best and task.main_metric is not None
            and restore_best_weights(model, f.model_dir)):
        print(f"using the best weights on the dev data "
              f"({os.path.join(f.model_dir, 'best_metrics.json')})")
    if f.do_eval:
        results = task.evaluate(model)[1]
        print(json.dumps(results, indent=2, sort_keys=True))
        if prepared.chief:
            write_json(os.path.join(f.model_dir, "eval_results.json"), results)
            task.write_eval_details(f.model_dir)
    if prepared.chief and "do_predict" in f and f.do_predict:
        task.write_predictions(model, f.model_dir)
    if prepared.chief and f.export_dir:
        token_ids_only = ("export_token_ids_only" in f
                          and f.export_token_ids_only)
        path = task.export(model, f.export_dir, token_ids_only)
        print(f"exported to {path}")


def run(task):
    """Runs the task's lifecycle as its flags say; returns the exit status.

    A user mistake found before training (a bad flag value, an unreadable or
    malformed file, an output location that cannot be written, a checkpoint
    that does not fit, a model directory in use or holding a different run)
    prints one line naming the flag or file and returns 2; a model directory
    that the refused run created is removed again. Once training has
    started, a loss that is not finite and a full, over-quota or read-only
    disk print one line (the step; the path and its free space) and return
    1; Ctrl-C prints one line saying what is saved and returns 130. Other
    errors are program errors and propagate.
    """
    from tfbert.training import TrainingInterrupted
    from tfbert.utils.atomic import StorageError
    from tfbert.utils.finite import NonFiniteError

    model_dir = task.flags.model_dir
    created = _directories_to_create(model_dir)
    phase = "prepare"
    with contextlib.ExitStack() as stack:
        try:
            try:
                prepared = prepare(task, stack)
            except (ValueError, OSError) as error:
                stack.close()  # Releases the lock file.
                _remove_if_empty(created)
                report_error(error)
                return 2
            phase = "execute"
            execute(task, prepared)
        except UserError as error:  # Found once the data is read.
            report_error(error)
            return 2
        except (NonFiniteError, StorageError) as error:
            report_error(error)
            return 1
        except KeyboardInterrupt as error:
            if isinstance(error, TrainingInterrupted):
                message = str(error)
            elif phase == "prepare":
                message = ("interrupted before training started; rerunning "
                           "the same command starts again")
            else:
                message = (f"interrupted; the training state in {model_dir} "
                           "is kept and rerunning the same command resumes "
                           "from it")
            report_error(KeyboardInterrupt(message), label="")
            return 130
    return 0


@contextlib.contextmanager
def warnings_as_lines():
    """Shows each Python warning raised in the block (e.g. a preset without
    weights) after it as one line, `PROGRAM: warning: MESSAGE`."""
    with warnings.catch_warnings(record=True) as caught:
        yield
    for warning in caught:
        print(f"{_program()}: warning: {' '.join(str(warning.message).split())}",
              file=sys.stderr)


def _program():
    return os.path.basename(sys.argv[0]).removesuffix(".py")


def _directories_to_create(path):
    """The directories `os.makedirs(path)` would create, deepest first."""
    missing = []
    path = os.path.abspath(path) if path else None
    while path and not os.path.lexists(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def _remove_if_empty(directories):
    """Removes `directories` (deepest first) while they are empty."""
    for directory in directories:
        try:
            os.rmdir(directory)
        except OSError:
            return


def report_error(error, label="error"):
    """Prints `error` as one line: `PROGRAM: error: MESSAGE` (`PROGRAM:
    MESSAGE` without a `label`)."""
    message = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.strerror:
        message = (f"{error.filename}: {error.strerror}" if error.filename
                   else error.strerror)
    prefix = f"{_program()}: {label}: " if label else f"{_program()}: "
    print(prefix + " ".join(message.split()), file=sys.stderr)


def _parse_flags(argv, flag_values=FLAGS):
    """absl's flag parsing, but a bad flag is one line with exit status 2,
    as every other user error (absl's own parser exits with 1)."""
    try:
        return flag_values(argv)
    except flags.Error as error:
        report_error(error)
        sys.exit(2)


def main_program(specs, body, *, required=(), doc=None,
                 user_errors=(ValueError, OSError)):
    """Runs an absl program: defines its flags from `define` specs (all
    shown by --help, after `doc`), checks the `required` ones, then exits
    with `body()`'s status. The `user_errors` that `body` raises are
    reported in one line, with exit status 2."""
    if doc:
        sys.modules["__main__"].__doc__ = doc
    before = set(FLAGS)
    specs() if callable(specs) else define(FLAGS, specs)
    for name in sorted(set(FLAGS) - before):
        FLAGS.register_key_flag_for_module(sys.argv[0], FLAGS[name])

    def app_main(argv):
        if len(argv) > 1:
            raise app.UsageError(
                f"unexpected arguments: {' '.join(argv[1:])}", exitcode=2)
        if not FLAGS["verbosity"].present:
            # absl would log at INFO: TensorFlow's notices on every save.
            logging.set_verbosity(logging.WARNING)
        try:
            for name in required:
                if FLAGS[name].value is None:
                    raise UserError(f"--{name} is required")
            status = body()
        except user_errors as error:
            report_error(error)
            status = 2
        sys.exit(status)

    app.run(app_main, flags_parser=_parse_flags)


def main(task_class):
    """The command-line program of `task_class`. Its user errors are
    reported by `run` (those raised once training started are not)."""
    main_program(lambda: define_flags(task_class),
                 lambda: run(task_class(FLAGS)), user_errors=(),
                 doc=sys.modules[task_class.__module__].__doc__)
