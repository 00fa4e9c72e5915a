"""The flags every task program shares, and a task program's launcher.

A task program (`tfbert-glue`, `tfbert-squad`, ...) is a `TaskProgram`: its
own flags, the shared flags it offers and their defaults, and the checks on
flag values that need only Python. Its `config_class` is the frozen
dataclass of the task's settings, made from the same specs: the task
(`tfbert.tasks.X`) is made from an instance of it, never from flags. `main`
parses the command line, runs the checks before it imports the task (which
imports TensorFlow), turns the flags into that config once and hands the
task to the runner (`tfbert.tasks.runner.run`).

Everything here but `define_flags` and `main` is plain Python without absl,
so the library imports the specs and checks without it.
"""

import dataclasses
import functools
import importlib
import os
import tempfile
from collections.abc import Callable

from tfbert_cli import specs as flag_specs
from tfbert_cli.errors import UserError
from tfbert_config.bounds import ParameterError
from tfbert_config.export import (FEED_FORWARD_SHARDS, ExportConfig,
                                  RequestLimits)
from tfbert_config.training import TrainingConfig

# Shared flags a task may leave out (every other shared flag is offered by
# every task).
OPTIONAL_FLAGS = frozenset({"do_predict", "pad_to_max_length",
                            "max_train_examples", "max_eval_examples",
                            "max_predict_examples", "export_token_ids_only",
                            "export_precision", "export_constant_kernels",
                            "export_feed_forward_shards",
                            "export_max_text_chars", "export_max_batch_chars",
                            "export_max_windows", "export_xla",
                            "classifier_dropout"})

# The shared flags, as `define` specs; a task changes their defaults with
# `TaskProgram.defaults`.
SHARED_FLAGS = (
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
    ("bool", "export_xla", False,
     "Run the exported encoder as one XLA-compiled function (inputs padded "
     "to a few bucket shapes, compiled by the warmup requests); TF Serving "
     "needs --xla_cpu_compilation_enabled (docs/serving.md). Not with "
     "--export_constant_kernels."),
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


# A task that offers distillation (`tfbert.tasks.teacher`) adds these.
DISTILL_FLAGS = (
    ("string", "teacher_model_dir", None,
     "Distil from this finished run of the same task (its --model_dir): "
     "its best weights, else its last ones."),
    ("float", "distill_alpha", 0.5,
     "With --teacher_model_dir: weight of the hard-label loss; the "
     "teacher's term gets 1 - alpha."),
    ("float", "distill_temperature", 2.0,
     "With --teacher_model_dir: softmax temperature of the teacher's and "
     "the student's logits."),
    ("integer", "student_num_layers", None,
     "With --teacher_model_dir: start the student from this many of the "
     "teacher's layers, evenly spaced, with its embeddings and head "
     "(instead of --init_checkpoint)."),
    ("string", "distill_file", None,
     "With --teacher_model_dir: unlabelled texts, one per line (`text ||| "
     "text` for text pairs; for tagging, words split by spaces), trained "
     "on the teacher's logits only, beside the labelled training "
     "examples."),
    ("float", "distill_hidden_weight", 0.0,
     "With --teacher_model_dir: weight of the intermediate-layer term that "
     "makes each student layer's output match a teacher layer's (mean "
     "squared error, through a learned projection where the widths "
     "differ); 0: off. The teacher then runs in every training step."),
    ("float", "distill_attention_weight", 0.0,
     "With --teacher_model_dir: weight of the intermediate-layer term that "
     "makes each student layer's attention distributions match a teacher "
     "layer's (KL divergence; the same number of heads); 0: off. The "
     "teacher then runs in every training step."),
)


@dataclasses.dataclass(frozen=True)
class TaskProgram:
    """A task program's command line.

    Attributes:
      task: the task class, "module:Class" (imported once the flags are
        checked).
      flags: `define` specs of the task's own flags.
      defaults: defaults of shared flags that this recipe changes, e.g.
        `{"max_seq_length": 384}`.
      optional_flags: the `OPTIONAL_FLAGS` this task offers (all by
        default).
      minimum_seq_length: `(flag_values) -> int`, the shortest
        --max_seq_length the task can use.
      check: `(values) -> None`, the task's checks on its values (its
        config, or the parsed flags: read as attributes), combinations and
        bounds that read no file; raises `UserError`.
      check_given: `(flag_values) -> None`, the checks that need to know
        which flags the command line gave (absl `FlagValues`); made by the
        command line only, before the config.
    """

    task: str
    flags: tuple = ()
    defaults: dict = dataclasses.field(default_factory=dict)
    optional_flags: frozenset = OPTIONAL_FLAGS
    minimum_seq_length: Callable = lambda values: 3
    check: Callable = lambda values: None
    check_given: Callable = lambda flag_values: None

    @functools.cached_property
    def specs(self):
        """The specs of every flag the program offers: the shared ones
        (with the program's defaults), then its own."""
        return tuple(
            (kind, name, self.defaults.get(name, default), *rest)
            for kind, name, default, *rest in SHARED_FLAGS
            if name not in OPTIONAL_FLAGS or name in self.optional_flags
        ) + tuple(self.flags)

    @functools.cached_property
    def flag_names(self):
        """The names of the flags the program offers."""
        return frozenset(spec[1] for spec in self.specs)

    @functools.cached_property
    def config_class(self):
        """The task's config: a frozen dataclass with a field per flag the
        program offers (its default the flag's) and per shared flag it does
        not offer (the shared default), e.g. `GlueConfig` for
        "tfbert.tasks.glue:GlueTask"."""
        module, task = self.task.split(":")
        offered = self.flag_names
        unoffered = tuple(spec for spec in SHARED_FLAGS
                          if spec[1] not in offered)
        return flag_specs.config_class(
            task.removesuffix("Task") + "Config", self.specs + unoffered,
            module=module)

    def config(self, flag_values):
        """The `config_class` instance of parsed flags (or any object with
        the offered flags as attributes)."""
        return flag_specs.config_of(self.config_class, flag_values,
                                    self.flag_names)


def define_flags(program, fv=None):
    """Defines the flags `program` offers in the `FlagValues` `fv` (default
    absl's global `FLAGS`)."""
    # absl is imported by a program that runs: the library reads the specs
    # above without it.
    from tfbert_cli import program as absl_program

    absl_program.define(absl_program.FLAGS if fv is None else fv,
                        program.specs)


def check_given(f, program):
    """The checks on the parsed flags `f` (absl `FlagValues`) that need to
    know which flags were given, shared and the program's; raises
    `UserError`."""
    if ("export_feed_forward_shards" in f
            and f["export_feed_forward_shards"].present
            and f.export_constant_kernels):
        raise UserError("--export_feed_forward_shards is read only "
                        "without --export_constant_kernels (constant "
                        "kernels stay whole)")
    if f["do_lower_case"].present and not f.vocab_file:
        raise UserError("--do_lower_case is read only with --vocab_file")
    if "teacher_model_dir" in f and not f.teacher_model_dir:
        for _, name, *_ in DISTILL_FLAGS[1:]:
            if f[name].present:
                raise UserError(
                    f"--{name} is read only with --teacher_model_dir")
    program.check_given(f)


def check_flags(f, program, minimum_seq_length=None):
    """The checks on the values `f` (a task config, or the parsed flags:
    read as attributes) that read no file: the shared flags' (with
    --max_seq_length at least `minimum_seq_length`, default the
    program's), then the program's own; raises `UserError`."""

    def require(condition, message):
        if not condition:
            raise UserError(message)

    if minimum_seq_length is None:
        minimum_seq_length = program.minimum_seq_length(f)
    require(f.model_dir, "`model_dir` is required")
    predicts = "do_predict" in program.flag_names
    actions = [f.do_train, f.do_eval, bool(f.export_dir),
               predicts and f.do_predict]
    require(any(actions), "nothing to do: pass `do_train`, `do_eval`"
            + (", `do_predict`" if predicts else "")
            + " or `export_dir`")
    require(f.max_seq_length >= minimum_seq_length,
            f"`max_seq_length`={f.max_seq_length} is too short for this task "
            f"(at least {minimum_seq_length})")
    for name in ("train_batch_size", "eval_batch_size"):
        require(getattr(f, name) > 0, f"`{name}` must be positive, got "
                f"{getattr(f, name)}")
    training_config(f)  # Its bounds, named as parameters.
    for split in ("train", "eval", "predict"):
        name = f"max_{split}_examples"
        require(getattr(f, name) >= 0, f"`{name}` must be >= 0 (0 = all), "
                f"got {getattr(f, name)}")
    require(not f.export_constant_kernels or f.export_precision == "bfloat16",
            "`export_constant_kernels` is read only with "
            "`export_precision`=bfloat16")
    require(f.export_feed_forward_shards >= 1,
            "`export_feed_forward_shards` must be >= 1, got "
            f"{f.export_feed_forward_shards}")
    require(not (f.export_xla and f.export_constant_kernels),
            "`export_xla` is read only without `export_constant_kernels` "
            "(an XLA export keeps its kernels as variables)")
    for name in ("export_max_text_chars", "export_max_batch_chars",
                 "export_max_windows"):
        require(getattr(f, name) >= 1,
                f"`{name}` must be >= 1, got {getattr(f, name)}")
    require(f.tpu is None or f.distribution_strategy == "tpu",
            "`tpu` is read only with `distribution_strategy`=tpu")
    require(f.num_gpus is None or f.distribution_strategy in (
        "one_device", "mirrored"), "`num_gpus` is read only with "
            "`distribution_strategy`=one_device or mirrored")
    if f.vocab_file and not os.path.isfile(f.vocab_file):
        raise UserError(f"`vocab_file`={f.vocab_file}: no such file")
    program.check(f)


def training_config(f):
    """The `TrainingConfig` the values `f` (a task config, or parsed flags)
    describe; a value out of its bounds is a `UserError` naming the
    flag."""
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
        # Named as the task's parameter (`errors.render`).
        raise UserError(f"`{error.parameter}` must be {error.bounds}, got "
                        f"{error.value}") from None


def export_config(f, program):
    """The `ExportConfig` the values `f` (a task config) describe (the
    `ExportConfig` defaults of the export flags `program` does not
    offer)."""
    offered = {name: getattr(f, f"export_{name}") for name in (
        "precision", "token_ids_only", "constant_kernels",
        "feed_forward_shards", "max_text_chars", "max_batch_chars",
        "max_windows", "xla") if f"export_{name}" in program.flag_names}
    limits = RequestLimits(**{
        name: offered.pop(name)
        for name in ("max_text_chars", "max_batch_chars", "max_windows")
        if name in offered})
    if offered.get("constant_kernels"):
        offered.pop("feed_forward_shards", None)
    return ExportConfig(limits=limits, **offered)


def check_output_location(flag, path):
    """Refuses (`UserError` naming the parameter `flag`) an output directory
    that cannot be made or written: a file, a path under a file, a
    read-only directory or file system. Creates nothing that stays: the
    nearest existing directory is probed with a temporary file (permission
    bits alone do not tell, e.g. for root or on a read-only mount)."""
    target = os.path.abspath(path)
    existing = target
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        where = "" if existing == target else f"{existing} "
        raise UserError(f"`{flag}`={path}: {where}is a file, not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".tfbert-write-check-",
                                     dir=existing)
    except OSError as error:
        raise UserError(f"`{flag}`={path}: {existing} is not writable "
                        f"({error.strerror})") from None
    os.close(fd)
    os.remove(probe)


def check_output_locations(f):
    """`check_output_location` of --model_dir and --export_dir (where
    predictions also go to --model_dir) of the values `f`."""
    for flag in ("model_dir", "export_dir"):
        if getattr(f, flag):
            check_output_location(flag, getattr(f, flag))


def main(program, doc):
    """The command-line program of the task `program` describes, `doc` its
    --help text. Its user errors are one line with exit status 2: those
    found by the checks here before TensorFlow is imported, and those the
    runner finds (`tfbert.tasks.runner.run`), their parameters named as
    flags (`--model_dir`)."""

    from tfbert_cli.program import FLAGS, main_program

    config = None

    def check():
        nonlocal config
        check_given(FLAGS, program)
        # The flags become the task's config here, once.
        config = program.config(FLAGS)
        check_flags(config, program)
        check_output_locations(config)

    def run(_):
        from tfbert.tasks import runner

        module, name = program.task.split(":")
        task_class = getattr(importlib.import_module(module), name)
        return runner.run(task_class(config), command_line=True)

    main_program(lambda: define_flags(program), run, check=check, doc=doc,
                 user_errors=())
