"""Sentence embeddings: train, evaluate and export a bi-encoder.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.sentence`.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from tfbert import losses
from tfbert.data.batching import prefetch_for_keras
from tfbert.data.sentence_batching import no_duplicate_batches
from tfbert.data.sentence_pairs import read_sentence_pairs
from tfbert.metrics.embedding_similarity import STSEvaluator
from tfbert.metrics.pair_classification import PairClassificationEvaluator
from tfbert.metrics.retrieval import RetrievalEvaluator
from tfbert.tasks import runner
from tfbert_cli import sentence as sentence_program

# --loss -> (loss class, needs labels, needs a negative column, 0/1 labels).
LOSSES = {
    "mnrl": (losses.MultipleNegativesRankingLoss, False, False, False),
    "cosine": (losses.CosineSimilarityLoss, True, False, False),
    "cosent": (losses.CoSENTLoss, True, False, False),
    "triplet": (losses.TripletLoss, False, True, False),
    "contrastive": (losses.ContrastiveLoss, True, False, True),
    "online_contrastive": (losses.OnlineContrastiveLoss, True, False, True),
}
# The metric that selects the best model, per evaluator.
MAIN_METRICS = {"sts": "spearman_cosine",
                "pair_classification": "cosine_average_precision",
                "retrieval": "ndcg@10"}


# What a SentenceTask is made from: a frozen dataclass, a field per
# flag of `tfbert_cli.sentence` with the flag's default.
SentenceConfig = sentence_program.PROGRAM.config_class


class SentenceTask(runner.Task):
    """Bi-encoder training on sentence pairs (`SentenceEncoder`)."""

    name = "sentence"
    program = sentence_program.PROGRAM
    training_parameters = ("train_file", "text_a_column", "text_b_column",
                           "text_negative_column", "label_column",
                           "score_scale", "loss", "pooling", "normalize")

    def check(self):
        f = self.config
        _, needs_labels, needs_negative, binary = LOSSES[f.loss]
        if f.do_train and needs_labels and not f.label_column:
            raise runner.UserError(f"`loss`={f.loss} needs `label_column`")
        if f.do_train and needs_negative and not f.text_negative_column:
            raise runner.UserError(
                f"`loss`={f.loss} needs `text_negative_column`")
        self.train_pairs = None
        if f.do_train:
            self.train_pairs = self._read(
                f.train_file, negatives=needs_negative or f.loss == "mnrl",
                labels=needs_labels)
            if f.max_train_examples:
                self.train_pairs = _first(self.train_pairs,
                                          f.max_train_examples)
            if binary and not self.train_pairs.binary:
                raise runner.UserError(
                    f"{f.train_file}: `loss`={f.loss} needs 0/1 labels in "
                    f"column {f.label_column!r}")
            if f.loss == "mnrl" and len(set(self.train_pairs.texts_a)) < 2:
                raise runner.UserError(
                    f"{f.train_file}: `loss`=mnrl needs at least 2 distinct "
                    f"{f.text_a_column!r} texts (in-batch negatives)")
        self.eval_pairs = None
        if f.eval_file and (f.do_eval or f.do_train):
            self.eval_pairs = self._read(f.eval_file, negatives=False,
                                         labels=bool(f.label_column))
            if f.max_eval_examples:
                self.eval_pairs = _first(self.eval_pairs, f.max_eval_examples)

    def _read(self, path, negatives, labels):
        f = self.config
        return read_sentence_pairs(
            path, f.text_a_column, f.text_b_column,
            text_negative_column=(f.text_negative_column if negatives
                                  else None),
            label_column=f.label_column if labels else None,
            score_scale=f.score_scale)

    def training_files(self):
        return [self.config.train_file]

    def build_inputs(self, preprocessor):
        self.preprocessor = preprocessor
        pairs = self.eval_pairs
        self.evaluator_name = self.evaluator = None
        if pairs is None:
            return
        if pairs.labels is None:
            corpus = list(dict.fromkeys(pairs.texts_b))
            ids = {text: i for i, text in enumerate(corpus)}
            self.evaluator_name = "retrieval"
            self.evaluator = RetrievalEvaluator(
                pairs.texts_a, corpus, [{ids[t]} for t in pairs.texts_b])
        elif pairs.binary:
            self.evaluator_name = "pair_classification"
            self.evaluator = PairClassificationEvaluator(
                pairs.texts_a, pairs.texts_b, pairs.labels)
        else:
            self.evaluator_name = "sts"
            self.evaluator = STSEvaluator(pairs.texts_a, pairs.texts_b,
                                          pairs.labels)

    def build_model(self, init_checkpoint):
        from tfbert.models.sentence_encoder import SentenceEncoder

        f = self.config
        return SentenceEncoder.from_pretrained(
            init_checkpoint, pooling=f.pooling, normalize=f.normalize,
            preprocessor=self.preprocessor)

    def train_dataset(self):
        """One epoch, the same every epoch (the trainer repeats and resumes
        it): shuffled with --seed; for mnrl, batches without duplicate
        texts (`no_duplicate_batches`)."""
        f, pairs = self.config, self.train_pairs
        count = len(pairs)
        labels = (pairs.labels if pairs.labels is not None
                  else np.zeros(count, np.float32))
        if f.loss == "mnrl":
            batches = no_duplicate_batches(pairs.columns, f.train_batch_size,
                                           seed=f.seed)
        else:
            order = np.random.default_rng(f.seed).permutation(count)
            batches = [order[i:i + f.train_batch_size]
                       for i in range(0, count, f.train_batch_size)]
        columns = tuple(np.asarray(column, dtype=object)
                        for column in pairs.columns)

        def generate():
            for batch in batches:
                yield (tuple(column[batch].tolist() for column in columns),
                       labels[batch])

        spec = tf.TensorSpec([None], tf.string)
        dataset = tf.data.Dataset.from_generator(generate, output_signature=(
            tuple(spec for _ in columns), tf.TensorSpec([None], tf.float32)))
        dataset = dataset.apply(
            tf.data.experimental.assert_cardinality(len(batches)))
        return prefetch_for_keras(dataset), len(batches)

    def compile_args(self):
        return {"loss": LOSSES[self.config.loss][0](), "metrics": None}

    @property
    def main_metric(self):
        return (MAIN_METRICS[self.evaluator_name] if self.evaluator
                else None)

    def evaluate(self, model):
        metrics = self.evaluator(model, batch_size=self.config.eval_batch_size)
        results = {"evaluator": self.evaluator_name,
                   "num_examples": len(self.eval_pairs), **metrics}
        return metrics, results

    def serving_module(self, model):
        from tfbert.export.embedding_serving import EmbeddingServingModule

        return EmbeddingServingModule(model, self.preprocessor)


def _first(pairs, count):
    """The first `count` rows of `pairs`."""
    return dataclasses.replace(
        pairs, texts_a=pairs.texts_a[:count], texts_b=pairs.texts_b[:count],
        texts_negative=(None if pairs.texts_negative is None
                        else pairs.texts_negative[:count]),
        labels=None if pairs.labels is None else pairs.labels[:count])

