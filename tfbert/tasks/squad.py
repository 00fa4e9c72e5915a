"""SQuAD v1.1 / v2.0: fine-tune, evaluate, predict and export a span labeler.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.squad`.

From Python:

    preprocessor = Preprocessor.from_pretrained(checkpoint)  # any family
    features = squad_data.convert_examples_to_features(
        squad_data.read_squad_examples(path), preprocessor.tokenizer,
        is_training=True, layout=preprocessor.layout)
    dataset, steps = build_dataset(features, 16, training=True)
    model = build_model(checkpoint)
"""

import math
import os

import keras
import numpy as np
import tensorflow as tf

from tfbert.data import squad as squad_data
from tfbert.data.batching import prefetch_for_keras
from tfbert.data.squad_postprocess import postprocess_predictions
from tfbert.export.task_models import serving_module_of
from tfbert.layers.masking import MASKED_LOGIT
from tfbert.metrics import squad as squad_metrics
from tfbert.models import BertSpanLabeler
from tfbert.tasks import runner, teacher
from tfbert.training.distillation import (TaskDistillationLoss,
                                          with_teacher_outputs)
from tfbert_cli import squad as squad_program


def _trim_to_longest(features, labels):
    length = tf.reduce_max(tf.reduce_sum(features["input_mask"], axis=1))
    return {name: value[:, :length] for name, value in features.items()}, labels


def build_dataset(features, batch_size, *, training, seed=42,
                  pad_to_max_length=False, labels=None):
    """Returns `(dataset, num_batches)`: one epoch of (inputs, labels)
    batches, shuffled with `seed` when training, each padded only to its
    longest feature unless `pad_to_max_length`. `labels` replace
    `features.labels()` (e.g. with a teacher's logits beside them)."""
    dataset = tf.data.Dataset.from_tensor_slices(
        (features.model_inputs(),
         features.labels() if labels is None else labels))
    if training:
        dataset = dataset.shuffle(len(features), seed=seed,
                                  reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size)
    if not pad_to_max_length:
        dataset = dataset.map(_trim_to_longest)
    return (prefetch_for_keras(dataset),
            math.ceil(len(features) / batch_size))


def build_model(init_checkpoint):
    """A `BertSpanLabeler` on the pretrained encoder, without the pooler it
    does not use (call in strategy scope)."""
    return BertSpanLabeler.from_pretrained(init_checkpoint)


def span_loss():
    """Mean of the start and end cross-entropies, as Keras loss arguments."""
    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return ({"start_logits": cross_entropy, "end_logits": cross_entropy},
            {"start_logits": 0.5, "end_logits": 0.5})


def predict_logits(model, features, batch_size, pad_to_max_length=False):
    """Start and end logits, float32 [N, max_seq_length] each."""
    dataset, _ = build_dataset(features, batch_size, training=False,
                               pad_to_max_length=pad_to_max_length)

    @tf.function(reduce_retracing=True)
    def step(inputs):
        return model(inputs, training=False)

    width = features.input_word_ids.shape[1]
    starts, ends = [], []
    for inputs, _ in dataset:
        logits = step(inputs)
        pad = [[0, 0], [0, width - int(tf.shape(inputs["input_mask"])[1])]]
        for out, name in ((starts, "start_logits"), (ends, "end_logits")):
            out.append(np.pad(logits[name].numpy(), pad,
                              constant_values=MASKED_LOGIT))
    empty = np.zeros((0, width), np.float32)
    return (np.concatenate(starts) if starts else empty,
            np.concatenate(ends) if ends else empty)


def evaluate(examples, result, version_2):
    """Official metrics of `result` (a `SquadPredictions`)."""
    if not version_2:
        return squad_metrics.squad_v1_metrics(examples, result.predictions)
    metrics = squad_metrics.squad_v2_metrics(examples, result.predictions)
    # The threshold search needs the best non-null answer of every question.
    best = squad_metrics.squad_v2_metrics(
        examples, {q: span["text"] for q, span in result.best_spans.items()},
        na_probs=result.null_odds)
    metrics.update({k: v for k, v in best.items() if k.startswith("best_")})
    return metrics


# What a SquadTask is made from: a frozen dataclass, a field per
# flag of `tfbert_cli.squad` with the flag's default.
SquadConfig = squad_program.PROGRAM.config_class


class SquadTask(runner.Task):
    """Extractive question answering (start/end span labeling)."""

    name = "squad"
    program = squad_program.PROGRAM
    training_parameters = (("version", "doc_stride", "max_query_length")
                           + teacher.TRAINING_PARAMETERS)

    def check(self):
        f = self.config
        self.version_2 = f.version == "2.0"
        self.train_examples = runner.first_examples(
            f, "train", self._read("train_file", f.do_train))
        if not self.version_2 and any(e.is_impossible
                                      for e in self.train_examples):
            raise runner.UserError(
                f"`train_file`={f.train_file} has unanswerable questions; "
                "use `version`=2.0")
        self.eval_examples = runner.first_examples(f, "eval", self._read(
            "eval_file", f.do_eval or (f.do_train and bool(f.eval_file))))
        if self.eval_examples and not any(e.answers or e.is_impossible
                                          for e in self.eval_examples):
            raise runner.UserError(f"`eval_file`={f.eval_file} has no answers "
                                   "to score")
        self.predict_examples = runner.first_examples(
            f, "predict", self._read("predict_file", f.do_predict))
        self.teacher = teacher.check(f, {"version": f.version})

    def _read(self, flag, needed):
        path = getattr(self.config, flag)
        if not needed:
            return []
        if not path:
            raise runner.UserError(f"`{flag}` is required here")
        examples = squad_data.read_squad_examples(path)
        if not examples:
            raise runner.UserError(f"`{flag}`={path} has no questions")
        return examples

    def training_files(self):
        return [self.config.train_file]

    def _features(self, examples, is_training):
        f = self.config
        return squad_data.convert_examples_to_features(
            examples, self.tokenizer, max_seq_length=f.max_seq_length,
            doc_stride=f.doc_stride, max_query_length=f.max_query_length,
            is_training=is_training, layout=self.layout)

    def build_inputs(self, preprocessor):
        f = self.config
        # The family's pair packing: [CLS] question [SEP] context [SEP], or
        # RoBERTa's <s> question </s></s> context </s>.
        if self.teacher:
            preprocessor = self.teacher.student_preprocessor(f, preprocessor)
        self.tokenizer = preprocessor.tokenizer
        self.layout = preprocessor.layout
        num_special = self.layout.num_special_tokens(2)
        window = f.max_seq_length - f.max_query_length - num_special
        if window < 1:
            raise runner.UserError(
                f"`max_seq_length`={f.max_seq_length} is too short for "
                f"`max_query_length`={f.max_query_length} and this model's "
                f"{num_special} special tokens")
        if f.doc_stride > window:
            raise runner.UserError(
                f"`doc_stride`={f.doc_stride} is longer than the context "
                f"part of a window ({window} tokens = `max_seq_length` - "
                f"`max_query_length` - {num_special} special tokens): "
                "context would be skipped")
        self.eval_features = (self._features(self.eval_examples, False)
                              if self.eval_examples else None)

    def build_model(self, init_checkpoint):
        if not self.teacher:
            return build_model(init_checkpoint)
        self.teacher_model, student = self.teacher.build(
            build_model, self.config, init_checkpoint)
        return student

    def train_dataset(self):
        f = self.config
        features = self._features(self.train_examples, True)
        print(f"{len(self.train_examples)} training questions -> "
              f"{len(features)} windows")
        labels = None
        if self.teacher:
            # Cached once per window, as tfbert-glue does
            # (docs/distillation.md); the student reads the same windows.
            logits = self.teacher.cached_logits(
                lambda: predict_logits(self.teacher_model, features,
                                       f.eval_batch_size), len(features))
            positions = features.labels()
            labels = {name: with_teacher_outputs(positions[name], outputs)
                      for name, outputs in zip(("start_logits", "end_logits"),
                                               logits)}
            self.teacher_model = None
        return build_dataset(features, f.train_batch_size, training=True,
                             seed=f.seed,
                             pad_to_max_length=f.pad_to_max_length,
                             labels=labels)

    def compile_args(self):
        loss, loss_weights = span_loss()
        if self.teacher:
            loss = {name: TaskDistillationLoss(self.teacher.config)
                    for name in loss}
        return {"loss": loss, "loss_weights": loss_weights}

    @property
    def main_metric(self):
        return "f1" if self.eval_examples else None

    def _answer(self, model, examples, features):
        f = self.config
        start_logits, end_logits = predict_logits(
            model, features, f.eval_batch_size, f.pad_to_max_length)
        return postprocess_predictions(
            examples, features, start_logits, end_logits,
            n_best_size=f.n_best_size, max_answer_length=f.max_answer_length,
            version_2_with_negative=self.version_2,
            null_score_diff_threshold=f.null_score_diff_threshold)

    def evaluate(self, model):
        result = self._answer(model, self.eval_examples, self.eval_features)
        metrics = evaluate(self.eval_examples, result, self.version_2)
        return metrics, metrics

    def write_predictions(self, model, output_dir):
        result = self._answer(model, self.predict_examples,
                              self._features(self.predict_examples, False))
        outputs = {"predictions.json": result.predictions,
                   "nbest_predictions.json": result.nbest}
        if self.version_2:
            outputs["null_odds.json"] = result.null_odds
        for filename, value in outputs.items():
            runner.write_json(os.path.join(output_dir, filename), value)
        print(f"wrote {len(result.predictions)} answers to "
              f"{os.path.join(output_dir, 'predictions.json')}")

    def serving_module(self, model):
        f = self.config
        return serving_module_of(
            model, tokenizer=self.tokenizer, max_seq_length=f.max_seq_length,
            doc_stride=f.doc_stride, max_query_length=f.max_query_length,
            max_answer_length=f.max_answer_length,
            version_2_with_negative=self.version_2,
            null_score_diff_threshold=f.null_score_diff_threshold,
            layout=self.layout)

