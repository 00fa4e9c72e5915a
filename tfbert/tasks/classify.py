"""Text classification and regression on your own CSV, TSV or JSONL files.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.classify`.
"""

import functools
import json
import os

import keras
import numpy as np
import tensorflow as tf

from tfbert.data import classification as data
from tfbert.data.batching import count_truncated, token_counts
from tfbert.losses import WeightedSparseCategoricalCrossentropy
from tfbert.metrics import classification as metrics
from tfbert.metrics import glue as glue_metrics
from tfbert.tasks import glue, runner, teacher
from tfbert.text.windows import special_token_count, window_counts
from tfbert.training.distillation import TaskDistillationLoss
from tfbert_cli import classify as classify_program

LABELS_FILE = "labels.txt"
THRESHOLDS_FILE = "thresholds.json"


def pool_windows(logits, windows_per_text, pooling):
    """float [N, classes]: each text's windows' logits (float [W, classes],
    in text order; `windows_per_text` int [N]) pooled by "mean" or
    "max"."""
    starts = np.r_[0, np.cumsum(windows_per_text)[:-1]].astype(np.int64)
    if pooling == "max":
        return np.maximum.reduceat(logits, starts, axis=0)
    return (np.add.reduceat(logits, starts, axis=0)
            / np.asarray(windows_per_text)[:, np.newaxis])


# What a ClassifyTask is made from: a frozen dataclass, a field per
# flag of `tfbert_cli.classify` with the flag's default.
ClassifyConfig = classify_program.PROGRAM.config_class


class ClassifyTask(runner.Task):
    """Classification, multi-label classification and regression of a
    user's table files."""

    name = "classify"
    program = classify_program.PROGRAM
    training_parameters = tuple(name for _, name, *_ in program.flags
                                if name not in ("train_file", "eval_file",
                                                "predict_file"))

    def _kind(self):
        return classify_program.kind(self.config)

    def check(self):
        f = self.config
        kind = self._kind()
        columns = data.Columns(f.text_a_column, f.text_b_column,
                               f.label_column)

        def read(path, labeled=True):
            return data.read_examples(path, columns, kind, labeled=labeled,
                                      label_separator=f.label_separator)
        self.train_examples = []
        if f.do_train:
            self.train_examples = runner.first_examples(
                f, "train", read(f.train_file))
        labels = self._labels(columns, kind)
        self.problem = data.Problem(columns, kind, labels)
        if self.train_examples and labels is not None:
            data.check_known_labels(self.train_examples, labels, columns)
        # The eval file selects the best model during training and is read
        # by --do_eval.
        self.eval_examples = runner.first_examples(
            f, "eval", read(f.eval_file)
            if f.eval_file and (f.do_eval or f.do_train) else [])
        if labels is not None:
            data.check_known_labels(self.eval_examples, labels, columns)
        self.predict_examples = runner.first_examples(
            f, "predict", read(f.predict_file, labeled=False)
            if f.do_predict else [])
        self.teacher = self._teacher(labels)
        if kind == "multi_label":
            for path, examples in ((f.train_file, self.train_examples),
                                   (f.eval_file, self.eval_examples)):
                empty = sum(not e.label for e in examples)
                if empty:
                    print(f"{path}: {empty} of {len(examples)} rows have no "
                          "label")

    def _teacher(self, labels):
        """The checked `Teacher` of --teacher_model_dir, or None."""
        f = self.config
        found = teacher.check(
            f, {"regression": f.regression, "multi_label": f.multi_label,
                "text_b_column": f.text_b_column},
            {"dropout": f.classifier_dropout},
            texts="pair" if f.text_b_column else "single")
        if found is None:
            return None
        # Per-window teacher logits would need per-window targets; the
        # class weights would weigh the hard term only (the command line
        # refuses the flags given with a teacher, `tfbert_cli.classify`).
        for name, unread in (("doc_stride", 0), ("class_weights", "none")):
            if getattr(f, name) != unread:
                raise runner.UserError(
                    f"{name} is not read with teacher_model_dir")
        theirs = teacher.saved_labels(f.teacher_model_dir)
        if labels is not None and theirs != tuple(labels):
            raise runner.UserError(
                f"`teacher_model_dir`={f.teacher_model_dir} has the classes "
                f"{', '.join(theirs) if theirs else '(none)'}; this run has "
                f"{', '.join(labels)}")
        return found

    def _labels(self, columns, kind):
        """The classes in id order: --label_names, the training file's or
        (not training) those saved in --model_dir."""
        f = self.config
        if kind == "regression":
            return None
        if f.label_names is not None:
            if len(set(f.label_names)) != len(f.label_names) or len(
                    f.label_names) < 2:
                raise runner.UserError("`label_names` needs at least two "
                                       "distinct names")
            return tuple(f.label_names)
        if self.train_examples:
            return data.label_set(self.train_examples, columns)
        saved = teacher.saved_labels(f.model_dir)
        if saved is None:
            raise runner.UserError(f"`model_dir`={f.model_dir} has no "
                                   f"trained model (no {LABELS_FILE}); run "
                                   "with `do_train` first")
        return saved

    def training_files(self):
        return [self.config.train_file,
                *(self.teacher.training_files() if self.teacher else [])]

    def _encoded(self, examples):
        """The labels `build_dataset` feeds: multi-hot for multi-label,
        GLUE's encoding otherwise."""
        if self.problem.is_multi_label:
            return data.multi_hot(examples, self.problem.labels)
        return glue.encode_labels(self.problem, examples)

    def build_inputs(self, preprocessor):
        f = self.config
        if self.teacher:
            preprocessor = self.teacher.student_preprocessor(f, preprocessor)
        self.preprocessor = preprocessor

        def dataset(examples, batch_size, training=False):
            return glue.build_dataset(
                examples, self.problem, preprocessor, batch_size,
                training=training, seed=f.seed,
                pad_to_max_length=f.pad_to_max_length,
                labels=self._encoded(examples), doc_stride=f.doc_stride)
        self._dataset = dataset
        self.eval_set = (dataset(self.eval_examples, f.eval_batch_size)[0]
                         if self.eval_examples else None)
        for path, examples in ((f.train_file, self.train_examples),
                               (f.eval_file, self.eval_examples),
                               (f.predict_file, self.predict_examples)):
            if not examples:
                continue
            texts = ([e.text_a for e in examples],)
            if self.problem.is_pair:
                texts += ([e.text_b for e in examples],)
            truncated = count_truncated(texts, preprocessor)
            if truncated and f.doc_stride:
                self.say(f"{path}: {truncated} of {len(examples)} rows are "
                         f"longer than `max_seq_length`={f.max_seq_length} "
                         f"tokens and are read in windows (`doc_stride`="
                         f"{f.doc_stride})")
            elif truncated:
                self.say(f"{path}: {truncated} of {len(examples)} rows are "
                         f"longer than `max_seq_length`={f.max_seq_length} "
                         "tokens and are truncated")
        self.thresholds = None

    def build_model(self, init_checkpoint):
        build = functools.partial(glue.build_model, self.problem,
                                  dropout=self.config.classifier_dropout,
                                  label_names=self.problem.labels)
        if not self.teacher:
            return build(init_checkpoint)
        self.teacher_model, student = self.teacher.build(build, self.config,
                                                         init_checkpoint)
        return student

    def train_dataset(self):
        f = self.config
        if self.problem.labels is not None:
            os.makedirs(f.model_dir, exist_ok=True)
            with open(os.path.join(f.model_dir, LABELS_FILE), "w",
                      encoding="utf-8") as file:
                file.write("".join(f"{label}\n"
                                   for label in self.problem.labels))
        if not self.teacher:
            return self._dataset(self.train_examples, f.train_batch_size,
                                 training=True)
        # Cached as in tfbert-glue (docs/distillation.md).
        examples, targets = glue.teacher_targets(
            self.teacher, self.teacher_model, self.train_examples,
            self._encoded(self.train_examples), self.problem,
            f.eval_batch_size)
        self.teacher_model = None
        return glue.build_dataset(
            examples, self.problem, self.preprocessor, f.train_batch_size,
            training=True, seed=f.seed, pad_to_max_length=f.pad_to_max_length,
            labels=targets)

    def compile_args(self):
        problem = self.problem
        if self.teacher:
            # The labels carry the teacher's logits, which Keras' metrics
            # cannot read; the eval metrics are still computed.
            return {"loss": TaskDistillationLoss(
                self.teacher.config, regression=problem.is_regression,
                multi_label=problem.is_multi_label), "metrics": []}
        if problem.is_multi_label:
            return {"loss": keras.losses.BinaryCrossentropy(from_logits=True),
                    "metrics": [keras.metrics.BinaryAccuracy(
                        name="accuracy", threshold=0.0)]}
        loss, glue_metric_list = glue.loss_and_metrics(problem)
        if self.config.class_weights == "balanced":
            weights = metrics.balanced_class_weights(
                self._encoded(self.train_examples), problem.num_classes)
            loss = WeightedSparseCategoricalCrossentropy(weights)
        return {"loss": loss, "metrics": glue_metric_list}

    @property
    def main_metric(self):
        if self.eval_set is None:
            return None
        return {"regression": "pearson", "multi_label": "micro_f1",
                "single_label": "macro_f1"}[self.problem.kind]

    def _logits(self, model, examples, dataset):
        """Each example's logits [N, classes] (its windows' pooled, with
        --doc_stride)."""
        f = self.config
        logits = glue.predict_logits(model, dataset)
        if not f.doc_stride:
            return logits
        budget = self.preprocessor.seq_length - special_token_count(
            self.preprocessor)
        counts = window_counts(token_counts(
            [e.text_a for e in examples], self.preprocessor.tokenizer),
            budget, f.doc_stride).numpy()
        return pool_windows(logits, counts, f.window_pooling)

    def _decide(self, logits):
        """Class ids (scores for regression) from logits [N, classes]."""
        return logits[:, 0] if self.problem.is_regression else np.argmax(
            logits, -1)

    def evaluate(self, model):
        problem, examples = self.problem, self.eval_examples
        labels = self._encoded(examples)
        logits = self._logits(model, examples, self.eval_set)
        if problem.is_regression:
            results = glue_metrics.compute(
                ("pearson", "spearman"), labels, self._decide(logits))
            main = results
        elif problem.is_multi_label:
            probabilities = tf.sigmoid(logits).numpy()
            truth = labels.astype(bool)
            self.thresholds = metrics.tune_thresholds(truth, probabilities)
            results = metrics.multi_label(truth, probabilities >= 0.5,
                                          problem.labels)
            results["tuned"] = {
                **metrics.multi_label(truth, probabilities >= self.thresholds,
                                      problem.labels),
                "thresholds": dict(zip(problem.labels,
                                       self.thresholds.tolist()))}
            main = {name: results[name] for name in (
                "micro_f1", "macro_f1", "subset_accuracy")}
        else:
            results = metrics.single_label(labels, self._decide(logits),
                                           problem.labels)
            main = {name: results[name] for name in (
                "accuracy", "micro_f1", "macro_f1")}
        results = {**results, "num_examples": len(examples)}
        return main, {"eval": results}

    def write_eval_details(self, output_dir):
        if self.thresholds is not None:
            runner.write_json(
                os.path.join(output_dir, THRESHOLDS_FILE),
                dict(zip(self.problem.labels, self.thresholds.tolist())))

    def write_predictions(self, model, output_dir):
        f, problem = self.config, self.problem
        examples = self.predict_examples
        dataset, _ = self._dataset(examples, f.eval_batch_size)
        logits = self._logits(model, examples, dataset)
        if problem.is_multi_label:
            chosen = tf.sigmoid(logits).numpy() >= self._thresholds()
            answers = [f.label_separator.join(
                label for label, on in zip(problem.labels, row) if on)
                for row in chosen]
        else:
            predictions = self._decide(logits)
            answers = ([f"{float(p):.6g}" for p in predictions]
                       if problem.is_regression
                       else [problem.labels[int(p)] for p in predictions])
        stem = os.path.splitext(os.path.basename(f.predict_file))[0]
        path = os.path.join(output_dir, "predictions", f"{stem}.tsv")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as file:
            file.write("id\tprediction\n" + "".join(
                f"{e.row_id}\t{answer}\n"
                for e, answer in zip(examples, answers)))
        print(f"wrote {len(examples)} predictions to {path}")

    def _thresholds(self):
        """The multi-label decision thresholds: tuned on the eval file in
        this run, else those saved in --model_dir, else 0.5."""
        if self.thresholds is not None:
            return self.thresholds
        path = os.path.join(self.config.model_dir, THRESHOLDS_FILE)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as file:
                saved = json.load(file)
            return np.array([saved[label] for label in self.problem.labels],
                            np.float32)
        return np.full(len(self.problem.labels), 0.5, np.float32)

    def serving_module(self, model):
        from tfbert.export.classifier_serving import ClassifierServingModule

        problem = self.problem
        if problem.is_multi_label and self.eval_set is not None:
            # Tuned for the weights exported (the best, or the last).
            self.evaluate(model)
            self.write_eval_details(self.config.model_dir)
        text_inputs = (("sentence1", "sentence2") if problem.is_pair
                       else ("sentence",))
        return ClassifierServingModule(
            model, self.preprocessor, problem.labels, text_inputs,
            thresholds=(self._thresholds() if problem.is_multi_label
                        else None),
            doc_stride=self.config.doc_stride or None,
            window_pooling=self.config.window_pooling)

