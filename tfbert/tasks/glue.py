"""GLUE: fine-tune, evaluate, predict and export a sequence classifier.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.glue`.

From Python, the pieces are plain functions:

    task = glue_data.get_task("sst2")
    examples = glue_data.read_examples("SST-2/train.tsv", task)
    preprocessor = BertPreprocessor.from_pretrained(
        "minilm-l6-h384-uncased", seq_length=128, pad_to_seq_length=False)
    dataset, steps = build_dataset(examples, task, preprocessor, 32,
                                   training=True)
    model = build_model(task, "minilm-l6-h384-uncased")
"""

import functools
import os

import keras
import numpy as np
import tensorflow as tf

from tfbert.data import glue as glue_data
from tfbert.export.task_models import PAIR_INPUTS, serving_module_of
from tfbert.data.batching import (batch_examples, count_batches, pack_texts,
                                  pack_windows, prefetch_for_keras)
from tfbert.metrics import glue as glue_metrics
from tfbert.models import BertClassifier
from tfbert.tasks import runner, teacher
from tfbert.training.distillation import (TaskDistillationLoss, unlabelled,
                                          with_teacher_outputs)
from tfbert_cli import glue as glue_program


def encode_labels(task, examples):
    """Class ids int32 [N] (float32 scores for regression; zeros if the
    examples are unlabeled)."""
    if any(e.label is None for e in examples):
        return np.zeros(len(examples), np.float32 if task.is_regression
                        else np.int32)
    if task.is_regression:
        return np.array([float(e.label) for e in examples], np.float32)
    ids = {label: i for i, label in enumerate(task.labels)}
    return np.array([ids[e.label] for e in examples], np.int32)


def build_dataset(examples, task, preprocessor, batch_size, *, training,
                  seed=42, pad_to_max_length=False, labels=None,
                  doc_stride=0):
    """Returns `(dataset, num_batches)`: one epoch of (features, labels).
    `labels` replace `encode_labels(task, examples)` (e.g. with a teacher's
    logits beside them, `with_teacher_outputs`).

    `task` is a `GlueTask` or any spec with its `is_pair`, `is_regression`
    and `labels` (`tfbert.data.classification.Problem`); `labels`, when
    given, are the examples' encoded labels (one row per example, e.g. with
    a teacher's logits beside them: `with_teacher_outputs`) instead of
    `encode_labels(task, examples)`. With `doc_stride` > 0 (single
    texts), each text becomes its strided windows (`pack_windows`), every
    window with the text's label, in text order.

    Tokenization and packing run in-graph and are cached; training data is
    shuffled (deterministically for `seed`) and batched by length; eval data
    keeps its order. The dataset's cardinality is known.
    """
    texts = ([e.text_a for e in examples],)
    if task.is_pair:
        texts += ([e.text_b for e in examples],)
    if labels is None:
        labels = encode_labels(task, examples)
    if doc_stride:
        dataset, windows = pack_windows(texts[0], labels, preprocessor,
                                        doc_stride)
        size = int(windows.sum())
    else:
        dataset, size = pack_texts(texts, labels, preprocessor), len(examples)
    dataset = dataset.cache()
    if training:
        dataset = dataset.shuffle(size, seed=seed,
                                  reshuffle_each_iteration=True)
    dataset = batch_examples(dataset, batch_size,
                             max_seq_length=preprocessor.seq_length,
                             by_length=training,
                             pad_to_max_length=pad_to_max_length)
    num_batches = count_batches(dataset)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(
        num_batches))
    return prefetch_for_keras(dataset), num_batches


def build_model(task, init_checkpoint, dropout=0.1, label_names=None):
    """A `BertClassifier` on the pretrained encoder of any family (call in
    strategy scope), holding `label_names` (default: the task's)."""
    if not task.is_regression:
        label_names = label_names or task.label_names or task.labels
    return BertClassifier.from_pretrained(init_checkpoint, task.num_classes,
                                          dropout=dropout,
                                          label_names=label_names)


def teacher_targets(teacher, model, examples, labels, task, batch_size):
    """`(examples, y_true)` of a distilled run: the labelled `examples`
    followed by the teacher's unlabelled ones (--distill_file), and their
    `with_teacher_outputs` rows: `labels` (encoded, [N] or [N, width]),
    NaN for the unlabelled, then the teacher `model`'s logits of every
    example (one pass, read with the teacher's preprocessor)."""
    examples = list(examples) + teacher.unlabelled
    logits = teacher.cached_logits(
        lambda: predict_logits(model, build_dataset(
            examples, task, teacher.teacher_preprocessor, batch_size,
            training=False, labels=np.zeros(len(examples), np.float32))[0]),
        len(examples))
    labels = np.asarray(labels, np.float32)
    width = labels.shape[1] if labels.ndim == 2 else 1
    return examples, with_teacher_outputs(
        np.concatenate([labels, unlabelled(len(teacher.unlabelled), width)]),
        logits)


def loss_and_metrics(task):
    """`(loss, metrics)` for `Model.compile`: MSE for regression, else
    cross-entropy on logits with accuracy."""
    if task.is_regression:
        return keras.losses.MeanSquaredError(), []
    return (keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            [keras.metrics.SparseCategoricalAccuracy(name="accuracy")])


def predict_logits(model, dataset):
    """The model's logits, float32 [N, classes], over a `build_dataset`
    dataset."""
    return model.predict(dataset.map(lambda features, label: features),
                         verbose=0)


def predict(model, dataset):
    """Predicted class ids [N] (scores for regression)."""
    logits = predict_logits(model, dataset)
    return logits[:, 0] if logits.shape[-1] == 1 else np.argmax(logits, -1)


def write_submission(path, task, examples, predictions):
    """Writes a GLUE submission file: `index<TAB>prediction`."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = ["index\tprediction"]
    for example, prediction in zip(examples, predictions):
        lines.append(f"{example.guid}\t" + (
            f"{float(prediction):.3f}" if task.is_regression
            else task.labels[int(prediction)]))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


# What a GlueTask is made from: a frozen dataclass, a field per
# flag of `tfbert_cli.glue` with the flag's default.
GlueConfig = glue_program.PROGRAM.config_class


class GlueTask(runner.Task):
    """Sequence classification and regression on the GLUE tasks."""

    name = "glue"
    program = glue_program.PROGRAM
    training_parameters = ("task",) + teacher.TRAINING_PARAMETERS

    def _spec(self):
        return (glue_data.get_task(self.config.task) if self.config.task
                else None)

    def check(self):
        f = self.config
        self.task = task = self._spec()
        if f.label_names is not None and (
                task.is_regression or len(f.label_names) != task.num_classes):
            raise runner.UserError(
                f"`label_names` has {len(f.label_names)} names; {task.name} "
                + ("is a regression task" if task.is_regression
                   else f"has {task.num_classes} classes"))
        self.teacher = teacher.check(
            f, {"task": task.name}, {"dropout": f.classifier_dropout},
            texts="pair" if task.is_pair else "single")

        def path(split):
            return glue_data.split_path(f.data_dir, task, split)
        self.train_examples = []
        if f.do_train:
            self.train_examples = runner.first_examples(
                f, "train", glue_data.read_examples(path("train"), task))
        # Dev data selects the best model during training when it exists,
        # and is required by --do_eval.
        self.eval_examples = [
            (split, runner.first_examples(
                f, "eval", glue_data.read_examples(path(split), task)))
            for split in task.dev_splits
            if f.do_eval or (f.do_train and os.path.exists(path(split)))]
        self.test_examples = []
        if f.do_predict:
            self.test_examples = [
                (name, glue_data.read_examples(path(split), task,
                                               labeled=False))
                for split, name in task.test_splits]
            ax_path = glue_data.find_ax_file(f.data_dir)
            if task.name == "mnli" and ax_path:
                self.test_examples.append(
                    ("AX.tsv", glue_data.read_examples(ax_path, task,
                                                       labeled=False)))
            self.test_examples = [
                (name, runner.first_examples(f, "predict", examples))
                for name, examples in self.test_examples]

    def training_files(self):
        return [glue_data.split_path(self.config.data_dir, self.task, "train"),
                *(self.teacher.training_files() if self.teacher else [])]

    def build_inputs(self, preprocessor):
        f = self.config
        # The checkpoint family's packing ([CLS] A [SEP] B [SEP], RoBERTa's
        # <s> A </s></s> B </s>, ...); a --vocab_file is WordPiece.
        self.preprocessor = (
            self.teacher.student_preprocessor(f, preprocessor)
            if self.teacher else preprocessor)

        def dataset(examples, batch_size, training=False):
            return build_dataset(examples, self.task, self.preprocessor,
                                 batch_size, training=training, seed=f.seed,
                                 pad_to_max_length=f.pad_to_max_length)
        self._dataset = dataset
        self.eval_sets = [(split, examples,
                           dataset(examples, f.eval_batch_size)[0])
                          for split, examples in self.eval_examples]

    def build_model(self, init_checkpoint):
        f = self.config
        if not self.teacher:
            return build_model(self.task, init_checkpoint,
                               f.classifier_dropout, f.label_names)
        self.teacher_model, student = self.teacher.build(
            functools.partial(build_model, self.task,
                              dropout=f.classifier_dropout,
                              label_names=f.label_names), f, init_checkpoint)
        return student

    def train_dataset(self):
        f, labels, examples = self.config, None, self.train_examples
        if self.teacher:
            # The teacher's logits, computed once per example and cached
            # with the dataset: the teacher runs without dropout, so every
            # epoch would compute the same values (docs/distillation.md).
            examples, labels = teacher_targets(
                self.teacher, self.teacher_model, examples,
                encode_labels(self.task, examples), self.task,
                f.eval_batch_size)
            self.teacher_model = None
        return build_dataset(examples, self.task, self.preprocessor,
                             f.train_batch_size, training=True, seed=f.seed,
                             pad_to_max_length=f.pad_to_max_length,
                             labels=labels)

    def compile_args(self):
        loss, metrics = loss_and_metrics(self.task)
        if self.teacher:
            # The training labels carry the teacher's logits, which Keras'
            # metrics cannot read; the dev metrics are still computed.
            loss = TaskDistillationLoss(self.teacher.config,
                                        regression=self.task.is_regression)
            metrics = []
        return {"loss": loss, "metrics": metrics}

    @property
    def main_metric(self):
        return self.task.main_metric if self.eval_sets else None

    def evaluate(self, model):
        results = {"task": self.task.name}
        for split, examples, dataset in self.eval_sets:
            metrics = glue_metrics.compute(
                self.task.metrics, encode_labels(self.task, examples),
                predict(model, dataset))
            results[split] = {**metrics, "num_examples": len(examples)}
        return results[self.eval_sets[0][0]], results

    def write_predictions(self, model, output_dir):
        for filename, examples in self.test_examples:
            dataset, _ = self._dataset(examples, self.config.eval_batch_size)
            path = os.path.join(output_dir, "predictions", filename)
            write_submission(path, self.task, examples,
                             predict(model, dataset))
            print(f"wrote {len(examples)} predictions to {path}")

    def serving_module(self, model):
        return serving_module_of(
            model, preprocessor=self.preprocessor,
            text_inputs=(PAIR_INPUTS if self.task.is_pair else ("sentence",)))

