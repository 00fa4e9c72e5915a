"""The task runner: the lifecycle every task shares, written once.

    config -> checks -> strategy -> data -> model -> train (resume, best
    model) -> evaluate -> predict -> export

A task (`Task` subclass: GLUE, SQuAD, NER, pretraining) supplies only what is
its own: reading its files, its model and loss, its metrics, how it writes
predictions and what it exports. It is made from its config, a frozen
dataclass (`GlueConfig`, ...: its `program.config_class`), and never sees
command-line flags. Its command line (flags, the checks on their values)
is its `program`, a `tfbert_cli.task_flags.TaskProgram`, whose launcher
(`tfbert_cli.X.main`) checks the flags before TensorFlow is imported, turns
them into the config and then calls `run`:

    python -m tasks.glue --task=sst2 --data_dir=DIR --model_dir=DIR --do_train

From Python, the same run is

    runner.run(GlueTask(GlueConfig(task="sst2", data_dir=DIR,
                                   model_dir=DIR, do_train=True)))

Every user mistake (a bad flag value, a missing or malformed file, a
checkpoint that does not fit) is found before training starts and ends the
program with a one-line message and exit status 2; see `run`. A message
names a parameter in backticks ("`model_dir`=X has no trained model"), which
`run` reports as the user gave it: `--model_dir` from the command line,
`model_dir` from Python (`tfbert_cli.errors.render`).
"""

import contextlib
import dataclasses
import json
import os
import sys
import warnings

from tfbert.utils.quiet import quiet_tensorflow_start
from tfbert_cli import task_flags
from tfbert_cli.errors import UserError, program_name, render, report_error

# Shared parameters that change what training computes; a model directory
# resumes only a run whose values of these (and whose data) are unchanged.
_TRAINING_PARAMETERS = (
    "init_checkpoint", "vocab_file", "max_seq_length", "pad_to_max_length",
    "train_batch_size", "learning_rate", "num_train_epochs",
    "warmup_proportion", "weight_decay", "adam_epsilon",
    "gradient_accumulation_steps", "layerwise_lr_decay", "checkpoint_steps",
    "mixed_precision", "seed", "max_train_examples", "classifier_dropout")


class Task:
    """What a task supplies to the runner.

    Class attributes:
      name: the task's command name (`glue` -> `tfbert-glue`).
      program: its command line, a `tfbert_cli.task_flags.TaskProgram` (its
        flags, their checks and its config class, `program.config_class`).
      training_parameters: names of the task's own parameters that change
        training (part of the model directory's fingerprint).
      command_line: whether the run's parameters came as flags (set by
        `run`): how `say` and the runner's reports name them.
      teacher: a distilling run's `tfbert.tasks.teacher.Teacher` (its
        `training_model` is what `fit` runs), else None.

    An instance is made from a config, an instance of
    `program.config_class` (a field per flag; `config`). The runner
    calls, in order: `check` (pure Python: reading every input file the
    run will need, once `program.check` has checked the config's values),
    `build_inputs` (tokenizer / preprocessor and datasets; TF ops may run),
    `build_model` (inside the strategy scope), then
    `train_dataset`/`compile_args` (with --do_train), `evaluate`,
    `write_predictions` and `export`.
    """

    name = ""
    program = task_flags.TaskProgram(task="")
    training_parameters = ()
    command_line = False
    teacher = None

    def __init__(self, config):
        self.config = config

    def say(self, message):
        """Prints the notice `message` about the run (stdout), the
        parameters it names in backticks written as the user gave them
        (`tfbert_cli.errors.render`)."""
        print(render(message, parameter_names(self.config),
                     self.command_line))

    def check(self):
        """Reads every file the run will need; raises `ValueError`/`OSError`
        naming the parameter (in backticks) or file:line."""

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

    def export(self, model, export_dir, config):
        """Exports the trained model as the `ExportConfig` `config` says;
        returns the path written. By default a TF Serving SavedModel of
        `serving_module` (`tfbert.export.export_task_model`)."""
        from tfbert.export import export_task_model

        return export_task_model(
            model, export_dir, self.serving_module, precision=config.precision,
            token_ids_only=config.token_ids_only,
            constant_kernels=config.constant_kernels,
            feed_forward_shards=config.feed_forward_shards,
            limits=config.limits, xla=config.xla)


def parameter_names(config):
    """The names of the config dataclass instance `config`'s fields: the
    parameters its task's messages name in backticks."""
    return frozenset(field.name for field in dataclasses.fields(config))


def first_examples(config, split, examples):
    """`examples` (a list, or None) cut to the first `max_{split}_examples`
    of `config` (`split`: "train", "eval" or "predict") unless that is 0."""
    limit = getattr(config, f"max_{split}_examples")
    return examples[:limit] if limit and examples else examples


def load_preprocessor(config):
    """The preprocessor of --vocab_file (WordPiece, BERT's packing), else
    the one of the --init_checkpoint's family (`Preprocessor.from_pretrained`:
    WordPiece, byte-level BPE or SentencePiece, and the family's packing),
    packing to --max_seq_length, each batch padded to its longest row."""
    from tfbert.text import BertPreprocessor, BertTokenizer, Preprocessor
    from tfbert.text.bert_tokenizer import NoVocabularyError

    settings = dict(seq_length=config.max_seq_length,
                    pad_to_seq_length=False)
    if config.vocab_file:
        return BertPreprocessor(
            BertTokenizer(config.vocab_file,
                          lowercase=config.do_lower_case), **settings)
    try:
        return Preprocessor.from_pretrained(config.init_checkpoint,
                                            **settings)
    except NoVocabularyError as error:
        raise UserError(f"`init_checkpoint`={config.init_checkpoint}: "
                        f"{error}; pass `vocab_file`") from error
    except (ValueError, OSError) as error:
        raise UserError(f"`init_checkpoint`={config.init_checkpoint}: "
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
    """The training parameters and data that a model directory's state
    belongs to."""
    from tfbert.training import file_fingerprint

    names = [name for name in _TRAINING_PARAMETERS
             if name in task.program.flag_names]
    names += task.training_parameters
    # Keyed as flags, as fingerprints have always been written.
    values = {f"--{name}": getattr(task.config, name) for name in names}
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
        raise UserError("`distribution_strategy`=multi_worker_mirrored needs "
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

    f = task.config
    task_flags.check_flags(f, task.program)
    task_flags.check_output_locations(f)
    task.check()
    os.makedirs(f.model_dir, exist_ok=True)
    state_dir = _training_state_dir(f)
    os.makedirs(state_dir, exist_ok=True)
    stack.enter_context(ModelDirLock(state_dir))
    if not f.do_train and not os.path.exists(
            os.path.join(state_dir, "checkpoints", "checkpoint")):
        raise UserError(f"`model_dir`={f.model_dir} has no trained model; "
                        "run with `do_train` first")
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
        raise UserError(f"`max_seq_length`={f.max_seq_length} exceeds the "
                        f"{positions} positions of `init_checkpoint`="
                        f"{f.init_checkpoint}")
    inner = model.encoder.config.intermediate_size
    shards = task_flags.export_config(f, task.program).feed_forward_shards
    if shards is not None and shards > inner:
        raise UserError(f"`export_feed_forward_shards`={shards} exceeds "
                        f"the intermediate size {inner} of "
                        f"`init_checkpoint`={f.init_checkpoint}")
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

    f, model = task.config, prepared.model
    if f.do_train:
        dataset, steps = task.train_dataset()
        def evaluate_fn():
            return task.evaluate(model)[0]
        train(model, dataset, steps_per_epoch=steps,
              # Read after train_dataset, which may set the epochs
              # (pretraining's num_train_steps).
              config=task_flags.training_config(task.config),
              strategy=prepared.strategy,
              evaluate_fn=(evaluate_fn if task.main_metric is not None
                           else None),
              best_metric=task.main_metric,
              training_model=(task.teacher.training_model()
                              if task.teacher else None),
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
    if prepared.chief and f.do_predict:
        task.write_predictions(model, f.model_dir)
    if prepared.chief and f.export_dir:
        path = task.export(model, f.export_dir,
                           task_flags.export_config(f, task.program))
        print(f"exported to {path}")


def run(task, command_line=False):
    """Runs the task's lifecycle as its config says; returns the exit
    status.

    A user mistake found before training (a bad parameter value, an
    unreadable or malformed file, an output location that cannot be
    written, a checkpoint that does not fit, a model directory in use or
    holding a different run) prints one line naming the parameter or file
    and returns 2; a model directory that the refused run created is
    removed again. Parameters are named as config fields (`model_dir`), or
    as flags (`--model_dir`) when `command_line` (the task's program,
    `tfbert_cli.task_flags.main`, runs it so). Once training has
    started, a loss that is not finite and a full, over-quota or read-only
    disk print one line (the step; the path and its free space) and return
    1; Ctrl-C prints one line saying what is saved and returns 130. Other
    errors are program errors and propagate.
    """
    from tfbert.training import TrainingInterrupted
    from tfbert.utils.atomic import StorageError
    from tfbert.utils.finite import NonFiniteError

    task.command_line = command_line

    def report(error, label="error"):
        report_error(error, label, parameter_names(task.config), command_line)

    model_dir = task.config.model_dir
    created = _directories_to_create(model_dir)
    phase = "prepare"
    with contextlib.ExitStack() as stack:
        try:
            try:
                prepared = prepare(task, stack)
            except (ValueError, OSError) as error:
                stack.close()  # Releases the lock file.
                _remove_if_empty(created)
                report(error)
                return 2
            phase = "execute"
            execute(task, prepared)
        except UserError as error:  # Found once the data is read.
            report(error)
            return 2
        except (NonFiniteError, StorageError) as error:
            report(error)
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
            report(KeyboardInterrupt(message), label="")
            return 130
    return 0


@contextlib.contextmanager
def warnings_as_lines():
    """Shows each Python warning raised in the block (e.g. a preset without
    weights) after it as one line, `PROGRAM: warning: MESSAGE`."""
    with warnings.catch_warnings(record=True) as caught:
        yield
    for warning in caught:
        message = " ".join(str(warning.message).split())
        print(f"{program_name()}: warning: {message}", file=sys.stderr)


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
