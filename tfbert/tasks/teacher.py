"""The teacher of a distilled task run: a finished run of the same task,
read from its model directory (`run_fingerprint.json` for how it was built,
`best.weights.h5` or its last checkpoint for its weights).

A task offers distillation by adding `tfbert_cli.task_flags.DISTILL_FLAGS`
to its program's flags and `TRAINING_PARAMETERS` to its own, calling
`check` (with its config) in `Task.check`,
`Teacher.student_preprocessor` in `build_inputs` and `Teacher.build` in
`build_model`; the loss is `tfbert.training.distillation`.
"""

import json
import os
import time
import types

from tfbert.data.glue import Example
from tfbert.data.table import utf8_lines
from tfbert.models.student import student_from_teacher
from tfbert.tasks import runner
from tfbert.training import restore_trained_weights
from tfbert.training.best_model import BEST_WEIGHTS, load_inference_weights
from tfbert.training.distillation import DistillationConfig
from tfbert.training.layer_transfer import LayerTransfer
from tfbert.training.run_state import FINGERPRINT
from tfbert_cli import task_flags

TRAINING_PARAMETERS = tuple(spec[1] for spec in task_flags.DISTILL_FLAGS)

# Between the two texts of a --distill_file line of a pair task.
PAIR_SEPARATOR = "|||"

# The teacher's training parameters that must equal the student's.
_MATCHING_PARAMETERS = ("max_seq_length",)


class Teacher:
    """A checked teacher run (from `check`).

    Attributes:
      config: the `DistillationConfig` of the student's config.
      model_dir: the teacher's model directory.
      settings: the teacher run's training parameters (as its fingerprint
        recorded them), by name.
      weights_path: its best weights file, or None (its last checkpoint).
      student_config: task-model arguments of a student made of the
        teacher's layers that are the student's own (e.g. its dropout).
    """

    def __init__(self, config, model_dir, settings, weights_path,
                 student_config, unlabelled=(), distill_file=None):
        self.config = config
        self.model_dir = model_dir
        self.settings = settings
        self.weights_path = weights_path
        self.student_config = student_config
        self.unlabelled = list(unlabelled)
        self.distill_file = distill_file
        self.teacher_preprocessor = None
        self._training_model = None

    def training_files(self):
        """The teacher's weights file and --distill_file, for the student's
        fingerprint."""
        return ([self.weights_path] if self.weights_path else []) + (
            [self.distill_file] if self.distill_file else [])

    def preprocessor(self, config):
        """The teacher's preprocessor (its --init_checkpoint's or
        --vocab_file's) at the student's --max_seq_length."""
        return runner.load_preprocessor(types.SimpleNamespace(
            init_checkpoint=self.settings["init_checkpoint"],
            vocab_file=self.settings.get("vocab_file"),
            do_lower_case=config.do_lower_case,
            max_seq_length=config.max_seq_length))

    def cached_logits(self, predict_fn, num_examples):
        """`predict_fn()`: the teacher's logits on the training data,
        computed once before training; prints what that pass cost."""
        start = time.perf_counter()
        logits = predict_fn()
        print(f"teacher logits of {num_examples} training examples in "
              f"{time.perf_counter() - start:.1f} s")
        return logits

    def student_preprocessor(self, config, preprocessor):
        """The preprocessor the student reads with: the teacher's with
        --student_num_layers (the student is made of the teacher's layers),
        else the student's own `preprocessor`, once checked to share the
        teacher's vocabulary. Sets `self.teacher_preprocessor`.

        Raises:
          UserError: if the vocabularies differ.
        """
        self.teacher_preprocessor = self.preprocessor(config)
        if config.student_num_layers:
            return self.teacher_preprocessor
        if (self.teacher_preprocessor.tokenizer.vocabulary
                != preprocessor.tokenizer.vocabulary):
            raise runner.UserError(
                f"`teacher_model_dir`={self.model_dir} has another vocabulary "
                f"than the student's (`init_checkpoint`="
                f"{self.settings['init_checkpoint']} there)")
        return preprocessor

    def build(self, build_fn, config, init_checkpoint):
        """`(teacher, student)` task models; call in the strategy scope.

        The teacher is `build_fn(its init_checkpoint)` with its trained
        weights; the student has --student_num_layers of its layers
        (`student_from_teacher`, with `student_config`) or is
        `build_fn(init_checkpoint)`.

        Raises:
          UserError: if the weights do not fit (another label set), the
            teacher has fewer layers than --student_num_layers, or the
            intermediate-layer terms do not fit the two encoders.
        """
        models = self._build(build_fn, config, init_checkpoint)
        if self.config.transfers_layers:
            try:  # Checked here, before any training.
                self._training_model = LayerTransfer(models[1], models[0],
                                                     self.config)
            except ValueError as error:
                raise runner.UserError(
                    f"`teacher_model_dir`={self.model_dir}: {error}"
                ) from error
            terms = ", ".join(
                f"{what} x{weight:g}" for what, weight in (
                    ("hidden states", self.config.hidden_weight),
                    ("attention", self.config.attention_weight)) if weight)
            pairs = "; ".join(f"student layer {i} learns teacher layer {j}"
                              for i, j in self._training_model.pairs)
            print(f"{pairs} ({terms}); the teacher runs in every training "
                  "step")
        return models

    def training_model(self):
        """What `fit` runs in place of the student from `build` when the
        intermediate-layer terms are on (a `LayerTransfer`, which holds the
        teacher), else None."""
        return self._training_model

    def _build(self, build_fn, config, init_checkpoint):
        model = build_fn(self.settings["init_checkpoint"])
        try:
            if self.weights_path:
                load_inference_weights(model, self.weights_path)
            else:
                restore_trained_weights(model, self.model_dir)
        except ValueError as error:
            raise runner.UserError(
                f"`teacher_model_dir`={self.model_dir}: its weights do not "
                f"fit this task's model (another label set?): {error}"
            ) from error
        k = config.student_num_layers
        if not k:
            return model, build_fn(init_checkpoint)
        try:
            return model, student_from_teacher(model, k, **self.student_config)
        except ValueError as error:
            raise runner.UserError(
                f"`student_num_layers`={k}: {error}") from error


LABELS_FILE = "labels.txt"


def saved_labels(model_dir):
    """The labels a classify or NER run saved in MODEL_DIR/labels.txt, in
    id order (a tuple of str), or None without that file."""
    path = os.path.join(model_dir, LABELS_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as file:
        return tuple(line.rstrip("\n") for line in file if line.strip())


def read_distill_file(path, is_pair):
    """The texts of a --distill_file as unlabelled `Example`s (guid
    `path:line`): one text per non-blank line, or for pair tasks two texts
    joined by `PAIR_SEPARATOR`.

    Raises:
      UserError: naming `path:line`, for a pair line without exactly one
        separator (or with an empty side), invalid UTF-8, or no text.
    """
    examples = []
    try:
        for number, line in utf8_lines(path):
            line = line.strip()
            if not line:
                continue
            texts = [text.strip() for text in line.split(PAIR_SEPARATOR)]
            if is_pair and (len(texts) != 2 or not all(texts)):
                raise runner.UserError(
                    f"{path}:{number}: a pair task reads `text "
                    f"{PAIR_SEPARATOR} text` lines")
            examples.append(Example(f"{path}:{number}", *(
                texts if is_pair else (line, None)), None))
    except OSError as error:
        raise runner.UserError(f"`distill_file`={path}: {error.strerror}"
                               ) from None
    except ValueError as error:
        raise runner.UserError(str(error)) from None
    if not examples:
        raise runner.UserError(f"`distill_file`={path} has no text")
    return examples


def check(config, shared, student_config=None, texts=None):
    """The `Teacher` of `config.teacher_model_dir`, or None when the run
    does not distil (its other distillation parameters are then not
    read: the command line refuses them, `tfbert_cli.task_flags`).

    Args:
      config: the student task's config.
      shared: the task's own parameters the teacher must share, e.g.
        `{"task": "sst2"}`.
      student_config: see `Teacher.student_config`.
      texts: "single" or "pair": the task reads --distill_file with one or
        two texts per line (a tagger reads "single" lines as words split by
        spaces); None: it does not read it.

    Raises:
      UserError: naming the parameter, for out-of-range values, or a
        teacher of another task or sequence length.
    """
    f = config
    if not f.teacher_model_dir:
        return None
    if not 0 <= f.distill_alpha <= 1:
        raise runner.UserError(
            f"`distill_alpha` must be in [0, 1], got {f.distill_alpha}")
    if not f.distill_temperature > 0:
        raise runner.UserError("`distill_temperature` must be positive, got "
                               f"{f.distill_temperature}")
    if f.distill_file and texts is None:
        raise runner.UserError("`distill_file` is read only by "
                               "tfbert-glue, tfbert-classify and tfbert-ner")
    if f.student_num_layers is not None and f.student_num_layers < 1:
        raise runner.UserError("`student_num_layers` must be positive, got "
                               f"{f.student_num_layers}")
    model_dir = f.teacher_model_dir
    path = os.path.join(model_dir, FINGERPRINT)
    if not os.path.isfile(path):
        raise runner.UserError(f"`teacher_model_dir`={model_dir}: not a "
                               f"trained run (no {FINGERPRINT})")
    try:
        with open(path, encoding="utf-8") as file:
            recorded = json.load(file)
    except json.JSONDecodeError as error:
        raise runner.UserError(f"{path}:{error.lineno}: not valid JSON "
                               f"({error.msg})") from error
    settings = {key[2:]: value for key, value in recorded.items()
                if key.startswith("--")}
    expected = dict(shared, **{name: getattr(f, name)
                               for name in _MATCHING_PARAMETERS})
    for name, value in expected.items():
        if settings.get(name) != value:
            raise runner.UserError(
                f"`teacher_model_dir`={model_dir} was trained with `{name}`="
                f"{settings.get(name)}, this run has `{name}`={value}")
    weights_path = os.path.join(model_dir, BEST_WEIGHTS)
    if not os.path.isfile(weights_path):
        weights_path = None
        if not os.path.isfile(os.path.join(model_dir, "checkpoints",
                                           "checkpoint")):
            raise runner.UserError(f"`teacher_model_dir`={model_dir}: no "
                                   "trained weights")
    unlabelled = (read_distill_file(f.distill_file, texts == "pair")
                  if f.distill_file else ())
    for name in ("distill_hidden_weight", "distill_attention_weight"):
        if not getattr(f, name) >= 0:
            raise runner.UserError(
                f"`{name}` must be >= 0, got {getattr(f, name)}")
    return Teacher(DistillationConfig(f.distill_alpha, f.distill_temperature,
                                      f.distill_hidden_weight,
                                      f.distill_attention_weight),
                   model_dir, settings, weights_path,
                   student_config or {}, unlabelled, f.distill_file)
