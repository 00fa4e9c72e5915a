"""Multiple choice (SWAG): fine-tune, evaluate, predict and export.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.multiple_choice`.
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from tfbert.data import multiple_choice as mc_data
from tfbert.data.batching import FEATURES, prefetch_for_keras
from tfbert.models import MultipleChoiceClassifier
from tfbert.tasks import runner
from tfbert_cli import multiple_choice as mc_program


def build_dataset(examples, preprocessor, batch_size, *, training, seed=42,
                  chunk_size=256):
    """Returns `(dataset, num_batches)`: one epoch of (features, labels),
    features int32 [batch, num_choices, seq] (each batch padded to its
    longest pair), labels int32 [batch] (zeros when unlabeled).
    Tokenization runs in-graph and is cached; training data is shuffled
    (deterministically for `seed`)."""
    contexts = [e.context for e in examples]
    choices = [list(e.choices) for e in examples]
    labels = np.array([e.label or 0 for e in examples], np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((contexts, choices, labels))

    def pack(context, choice, label):
        return mc_data.pack_choices(preprocessor, context, choice), label

    def trim(features, label):
        length = tf.reduce_max(tf.reduce_sum(features["input_mask"], -1))
        return {name: features[name][:, :length] for name in FEATURES}, label

    dataset = dataset.batch(chunk_size).map(pack).unbatch().map(trim).cache()
    if training:
        dataset = dataset.shuffle(len(examples), seed=seed,
                                  reshuffle_each_iteration=True)
    dataset = dataset.padded_batch(batch_size)
    num_batches = -(-len(examples) // batch_size)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(
        num_batches))
    return prefetch_for_keras(dataset), num_batches


def predict_probabilities(model, dataset):
    """float32 [N, num_choices]: the softmax of the model's scores."""
    logits = model.predict(dataset.map(lambda features, label: features),
                           verbose=0)
    return tf.nn.softmax(logits, axis=-1).numpy()


# What a MultipleChoiceTask is made from: a frozen dataclass, a field
# per flag of `tfbert_cli.multiple_choice` with the flag's default.
MultipleChoiceConfig = mc_program.PROGRAM.config_class


class MultipleChoiceTask(runner.Task):
    """One of N choices per example, scored pair by pair."""

    name = "multiple_choice"
    program = mc_program.PROGRAM
    training_parameters = ("num_choices",)

    def check(self):
        f = self.config

        def read(name, labeled=True):
            path = getattr(f, name)
            return (mc_data.read_examples(path, f.num_choices, labeled)
                    if path else [])
        self.train_examples = runner.first_examples(
            f, "train", read("train_file") if f.do_train else [])
        self.eval_examples = runner.first_examples(
            f, "eval", read("dev_file")
            if f.do_eval or (f.do_train and f.dev_file) else [])
        self.test_examples = runner.first_examples(
            f, "predict", read("test_file", labeled=False)
            if f.do_predict else [])

    def training_files(self):
        return [self.config.train_file]

    def build_inputs(self, preprocessor):
        f = self.config
        self.preprocessor = preprocessor

        def dataset(examples, batch_size, training=False):
            return build_dataset(examples, preprocessor, batch_size,
                                 training=training, seed=f.seed)
        self._dataset = dataset
        self.eval_dataset = (dataset(self.eval_examples, f.eval_batch_size)[0]
                             if self.eval_examples else None)

    def build_model(self, init_checkpoint):
        return MultipleChoiceClassifier.from_pretrained(
            init_checkpoint, dropout=self.config.classifier_dropout)

    def train_dataset(self):
        return self._dataset(self.train_examples, self.config.train_batch_size,
                             training=True)

    def compile_args(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True),
                "metrics": [keras.metrics.SparseCategoricalAccuracy(
                    name="accuracy")]}

    @property
    def main_metric(self):
        return "accuracy" if self.eval_examples else None

    def evaluate(self, model):
        predicted = predict_probabilities(model, self.eval_dataset).argmax(-1)
        labels = np.array([e.label for e in self.eval_examples])
        metrics = {"accuracy": float(np.mean(predicted == labels))}
        return metrics, {"task": self.name, "num_choices":
                         self.config.num_choices,
                         "dev": {**metrics,
                                 "num_examples": len(self.eval_examples)}}

    def write_predictions(self, model, output_dir):
        from tfbert.utils.atomic import atomic_write

        dataset, _ = self._dataset(self.test_examples,
                                   self.config.eval_batch_size)
        probabilities = predict_probabilities(model, dataset)
        path = os.path.join(output_dir, "predictions.jsonl")
        with atomic_write(path) as f:
            for example, row in zip(self.test_examples, probabilities):
                f.write(json.dumps({
                    "guid": example.guid, "choice": int(row.argmax()),
                    "probabilities": [round(float(p), 6) for p in row]})
                    + "\n")
        print(f"wrote {len(self.test_examples)} predictions to {path}")

    def serving_module(self, model):
        from tfbert.export.multiple_choice_serving import (
            MultipleChoiceServingModule)

        return MultipleChoiceServingModule(model, self.preprocessor,
                                           self.config.num_choices)

