"""Token classification (named entities, chunks, POS tags) of CoNLL or
JSONL files: the token classifier of `tfbert-ner`.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.ner`.
"""

import os

import numpy as np
import tensorflow as tf

from tfbert.data.conll import (check_tags, labels_from_sentences,
                               parse_labels, read_tagged)
from tfbert.data.tag_schemes import is_entity_scheme
from tfbert.data.ner_alignment import (IGNORE_LABEL, convert_to_features,
                                       pad_batch, stitch_predictions)
from tfbert.data.batching import FEATURES, prefetch_for_keras
from tfbert.metrics.ner import ner_metrics, tag_metrics
from tfbert.models import BertTokenClassifier, Encoder
from tfbert.models.bert_token_classifier import token_classification_loss
from tfbert.tasks import runner, teacher
from tfbert.text.packing_layout import BERT_LAYOUT
from tfbert_cli import ner as ner_program
from tfbert.training.distillation import (UNLABELLED_WORD,
                                          TokenDistillationLoss)


def build_features(sentences, labels, tokenizer, max_seq_length,
                   window_stride=None, layout=BERT_LAYOUT):
    """`NerFeatures` for sentences (label ids from their tags, if any),
    packed with the family's `layout` (`preprocessor.layout`)."""
    ids = {label: i for i, label in enumerate(labels)}
    label_ids = (None if any(s.tags is None for s in sentences)
                 else [[ids[t] for t in s.tags] for s in sentences])
    return convert_to_features([s.words for s in sentences], label_ids,
                               tokenizer, max_seq_length, window_stride,
                               layout=layout)


def train_dataset(features, batch_size, seed, max_seq_length=None,
                  labels=None):
    """`(dataset, num_batches)`: one shuffled epoch of padded `(features,
    labels)` batches (padded to the batch's longest window, or to
    `max_seq_length` if given). `labels` replace the features' (e.g. with
    the teacher's logits beside them: `with_teacher_logits`)."""
    dataset = features.dataset(labels).cache().shuffle(
        len(features), seed=seed, reshuffle_each_iteration=True)
    shape = [max_seq_length] if max_seq_length else [None]
    label_shape = shape + list(dataset.element_spec[1].shape[1:])
    num_batches = -(-len(features) // batch_size)
    dataset = dataset.padded_batch(
        batch_size,
        padded_shapes=({k: shape for k in FEATURES}, label_shape),
        padding_values=({k: 0 for k in FEATURES},
                        tf.constant(IGNORE_LABEL,
                                    dataset.element_spec[1].dtype)))
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(
        num_batches))
    return prefetch_for_keras(dataset), num_batches


def _window_batches(model, features, batch_size, max_seq_length):
    """Runs the model on every window, batched in order of length so
    batches pad little (each padded to `max_seq_length` if given); yields
    `(windows, logits, word_mask)`: the windows' indices int [b], float32
    logits [b, seq, num_labels] and bool [b, seq], True at word starts."""
    order = np.argsort([len(ids) for ids in features.input_word_ids],
                       kind="stable")
    for begin in range(0, len(order), batch_size):
        rows = order[begin:begin + batch_size]
        ids = pad_batch([features.input_word_ids[r] for r in rows], 0,
                        max_seq_length)
        word_mask = pad_batch([features.word_index[r] for r in rows], -1,
                              max_seq_length) >= 0
        inputs = {"input_word_ids": ids,
                  "input_mask": pad_batch(
                      [np.ones_like(features.input_word_ids[r]) for r in rows],
                      0, max_seq_length),
                  "input_type_ids": np.zeros_like(ids)}
        yield rows, model(inputs, training=False), word_mask


def window_logits(model, features, batch_size=64, max_seq_length=None):
    """The model's logits (a CRF model's emissions) of each window: a list
    of float32 [length, num_labels], in window order."""
    logits = [None] * len(features)
    for rows, batch, _ in _window_batches(model, features, batch_size,
                                          max_seq_length):
        for row, window in zip(np.asarray(batch), rows):
            logits[window] = row[:len(features.input_word_ids[window])]
    return logits


def with_teacher_logits(features, logits):
    """Per window, float32 [length, 1 + num_labels]: the window's tag ids
    (`features.labels`), then the teacher's `logits` of it, as
    `TokenDistillationLoss` reads them."""
    return [np.concatenate([tags[:, None].astype(np.float32), row], axis=1)
            for tags, row in zip(features.labels, logits)]


def predict_tags(model, features, labels, batch_size=64, max_seq_length=None):
    """Runs the model on every window and returns one tag list per sentence
    (every batch padded to `max_seq_length` if given)."""
    token_tags = [None] * len(features)
    for rows, logits, word_mask in _window_batches(model, features,
                                                   batch_size, max_seq_length):
        tags = model.decode(logits, word_mask).numpy()
        for row, window in zip(tags, rows):
            token_tags[window] = row
    return [[labels[t] for t in sentence]
            for sentence in stitch_predictions(features, token_tags)]


def write_predictions(path, sentences, predicted):
    """CoNLL output: `token gold predicted` (or `token predicted` without
    gold), a blank line after each sentence."""
    with open(path, "w", encoding="utf-8") as f:
        for sentence, tags in zip(sentences, predicted):
            for i, (word, tag) in enumerate(zip(sentence.words, tags)):
                gold = f" {sentence.tags[i]}" if sentence.tags else ""
                f.write(f"{word}{gold} {tag}\n")
            f.write("\n")


# What a NerTask is made from: a frozen dataclass, a field per
# flag of `tfbert_cli.ner` with the flag's default.
NerConfig = ner_program.PROGRAM.config_class


class NerTask(runner.Task):
    """Token classification with entity or plain tags."""

    name = "ner"
    program = ner_program.PROGRAM
    training_parameters = ("labels", "use_crf", "window_stride",
                           "tag_column", "tag_scheme"
                           ) + teacher.TRAINING_PARAMETERS

    def _read(self, flag, needed, require_tags=True):
        path = getattr(self.config, flag)
        if not needed:
            return None
        if not path:
            raise runner.UserError(f"`{flag}` is required here")
        sentences = read_tagged(path, require_tags, self.config.tag_column,
                                self.config.tag_scheme)
        if not sentences:
            raise runner.UserError(f"`{flag}`={path} has no sentences")
        return sentences

    def check(self):
        f = self.config
        self.train_sentences = runner.first_examples(
            f, "train", self._read("train_file", f.do_train))
        self.eval_sentences = runner.first_examples(f, "eval", self._read(
            "eval_file", f.do_eval or (f.do_train and bool(f.eval_file))))
        self.predict_sentences = runner.first_examples(
            f, "predict", self._read("predict_file", f.do_predict,
                                     require_tags=False))
        labels_file = os.path.join(f.model_dir, "labels.txt")
        if f.labels:
            self.labels = parse_labels(f.labels, f.tag_scheme)
        elif self.train_sentences is not None:
            self.labels = labels_from_sentences(self.train_sentences,
                                                f.tag_scheme)
        elif os.path.exists(labels_file):
            self.labels = parse_labels(labels_file, f.tag_scheme)
        else:
            raise runner.UserError(
                "give `labels` or `train_file` (no labels.txt in `model_dir`)")
        for sentences in (self.train_sentences, self.eval_sentences,
                          self.predict_sentences):
            if sentences and sentences[0].tags is not None:
                check_tags(sentences, self.labels)
        # The soft targets are the teacher's logits (a CRF's emissions) per
        # tag, so both must tag alike.
        self.teacher = teacher.check(
            f, {"tag_scheme": f.tag_scheme, "use_crf": f.use_crf},
            {"dropout": f.classifier_dropout}, texts="single")
        if self.teacher:
            # In the teacher's head order.
            labels = teacher.saved_labels(f.teacher_model_dir)
            if labels != tuple(self.labels):
                raise runner.UserError(
                    f"`teacher_model_dir`={f.teacher_model_dir} tags with "
                    f"{', '.join(labels) if labels else 'no labels.txt'}; "
                    f"this run with {', '.join(self.labels)}")

    def training_files(self):
        return [self.config.train_file,
                *(self.teacher.training_files() if self.teacher else [])]

    def build_inputs(self, preprocessor):
        f = self.config
        # The family's tokenizer and single-segment packing (with a
        # teacher, the same windows feed both: its per-token logits are the
        # student's targets).
        self.preprocessor = (
            self.teacher.student_preprocessor(f, preprocessor)
            if self.teacher else preprocessor)
        os.makedirs(f.model_dir, exist_ok=True)
        with open(os.path.join(f.model_dir, "labels.txt"), "w",
                  encoding="utf-8") as out:
            out.write("\n".join(self.labels) + "\n")
        self.eval_features = (self._features(self.eval_sentences)
                              if self.eval_sentences else None)

    def _features(self, sentences):
        f = self.config
        return build_features(sentences, self.labels,
                              self.preprocessor.tokenizer, f.max_seq_length,
                              f.window_stride, self.preprocessor.layout)

    def _build_model(self, init_checkpoint):
        f = self.config
        # The tagging head reads only sequence_output: no pooler. Label
        # names constrain the CRF's IOB2 moves (which BIOES obeys too);
        # plain tags have no such rules.
        return BertTokenClassifier(
            Encoder.from_pretrained(init_checkpoint, use_pooler=False),
            len(self.labels),
            dropout=f.classifier_dropout, use_crf=f.use_crf,
            labels=self.labels if is_entity_scheme(f.tag_scheme) else None)

    def build_model(self, init_checkpoint):
        if not self.teacher:
            self.model = self._build_model(init_checkpoint)
        else:
            self.teacher_model, self.model = self.teacher.build(
                self._build_model, self.config, init_checkpoint)
        return self.model

    def _unlabelled_features(self):
        """The windows of --distill_file's sentences (words split by
        spaces), each word's first piece tagged `UNLABELLED_WORD`."""
        f = self.config
        features = convert_to_features(
            [e.text_a.split() for e in self.teacher.unlabelled], None,
            self.preprocessor.tokenizer, f.max_seq_length, f.window_stride,
            layout=self.preprocessor.layout)
        features.labels = [
            np.where(words >= 0, UNLABELLED_WORD, IGNORE_LABEL).astype(
                np.int32) for words in features.word_index]
        return features

    def train_dataset(self):
        f = self.config
        features = self._features(self.train_sentences)
        pad_to = f.max_seq_length if f.pad_to_max_length else None
        labels = None
        if self.teacher and self.teacher.unlabelled:
            features = features.concatenate(self._unlabelled_features())
        if self.teacher:
            # Cached like GLUE's (docs/distillation.md): one pass of the
            # teacher over the training windows.
            logits = self.teacher.cached_logits(
                lambda: window_logits(self.teacher_model, features,
                                      f.eval_batch_size, pad_to),
                len(features))
            labels = with_teacher_logits(features, logits)
            self.teacher_model = None
        return train_dataset(features, f.train_batch_size, f.seed, pad_to,
                             labels=labels)

    def compile_args(self):
        hard_loss = (self.model.crf_negative_log_likelihood
                     if self.config.use_crf else token_classification_loss)
        if self.teacher:
            return {"loss": TokenDistillationLoss(self.teacher.config,
                                                  hard_loss)}
        # A CRF model computes its own loss (`compute_loss`).
        return {"loss": None if self.config.use_crf else hard_loss}

    @property
    def main_metric(self):
        if not self.eval_sentences:
            return None
        return "f1" if is_entity_scheme(self.config.tag_scheme) else "accuracy"

    def _tag(self, model, sentences, features):
        f = self.config
        return predict_tags(model, features, self.labels, f.eval_batch_size,
                            f.max_seq_length if f.pad_to_max_length else None)

    def evaluate(self, model):
        predicted = self._tag(model, self.eval_sentences, self.eval_features)
        gold = [s.tags for s in self.eval_sentences]
        scheme = self.config.tag_scheme
        results = (ner_metrics(gold, predicted, scheme)
                   if is_entity_scheme(scheme) else tag_metrics(gold, predicted))
        results.update(num_sentences=len(self.eval_sentences),
                       num_windows=len(self.eval_features),
                       use_crf=self.config.use_crf, tag_scheme=scheme)
        self._eval_tags = predicted
        return results, results

    def write_eval_details(self, output_dir):
        write_predictions(os.path.join(output_dir, "predictions.txt"),
                          self.eval_sentences, self._eval_tags)

    def write_predictions(self, model, output_dir):
        sentences = self.predict_sentences
        path = os.path.join(output_dir, "test_predictions.txt")
        write_predictions(path, sentences,
                          self._tag(model, sentences,
                                    self._features(sentences)))
        print(f"wrote tags for {len(sentences)} sentences to {path}")

    def serving_module(self, model):
        from tfbert.export.ner_serving import NerServingModule

        return NerServingModule(model, self.preprocessor.tokenizer,
                                self.labels, self.config.max_seq_length,
                                self.config.window_stride,
                                layout=self.preprocessor.layout,
                                scheme=self.config.tag_scheme)

