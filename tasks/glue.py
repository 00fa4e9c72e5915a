"""Fine-tune, evaluate and export BERT on a GLUE task.

    python -m tasks.glue --task=sst2 --data_dir=DIR \
      --init_checkpoint=minilm-l6-h384-uncased --model_dir=DIR \
      --export_dir=saved_models/sst2 --do_train --do_eval --do_predict

Reads DATA_DIR/<TASK>/{train,dev,test}.tsv; writes MODEL_DIR/eval_results.json,
GLUE submission files under MODEL_DIR/predictions/ and a raw-text SavedModel
under EXPORT_DIR/<version>/. The functions below also work from Python:

    task = glue_data.get_task("sst2")
    preprocessor = build_preprocessor("minilm-l6-h384-uncased", 128)
    train_ds, steps = build_dataset(examples, task, preprocessor, 32,
                                    training=True)
    model = build_model(task, "minilm-l6-h384-uncased")
    model.compile(...); model.fit(train_ds, ...)
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags, logging

from tfbert.data import glue as glue_data
from tfbert.data.batching import batch_examples, count_batches, pack_texts
from tfbert.export import export_saved_model
from tfbert.export.classifier_serving import ClassifierServingModule
from tfbert.metrics import glue as glue_metrics
from tfbert.models import BertClassifier, BertEncoder
from tfbert.text import BertPreprocessor
from tfbert.training import flags as training_flags
from tfbert.training import is_chief, restore_trained_weights, train

FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_string("task", None, f"GLUE task: {', '.join(glue_data.TASKS)}.")
    flags.DEFINE_string("data_dir", None, "Directory holding <TASK>/*.tsv.")
    flags.DEFINE_list("label_names", None,
                      "Names for the exported `label` output, in class order "
                      "(default: the task's label strings).")
    flags.DEFINE_float("classifier_dropout", 0.1, "Dropout before the head.")
    training_flags.define_training_flags()


def build_preprocessor(init_checkpoint, max_seq_length):
    """The checkpoint's tokenizer packing up to `max_seq_length` tokens,
    padding each batch to its longest sequence."""
    return BertPreprocessor.from_pretrained(
        init_checkpoint, seq_length=max_seq_length, pad_to_seq_length=False)


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
                  seed=42, pad_to_max_length=False):
    """Returns `(dataset, num_batches)`: one epoch of (features, labels).

    Tokenization and packing run in-graph and are cached; training data is
    shuffled (deterministically for `seed`) and batched by length; eval data
    keeps its order.
    """
    texts = ([e.text_a for e in examples],)
    if task.is_pair:
        texts += ([e.text_b for e in examples],)
    dataset = pack_texts(texts, encode_labels(task, examples), preprocessor)
    dataset = dataset.cache()
    if training:
        dataset = dataset.shuffle(len(examples), seed=seed,
                                  reshuffle_each_iteration=True)
    dataset = batch_examples(dataset, batch_size,
                             max_seq_length=preprocessor.seq_length,
                             by_length=training,
                             pad_to_max_length=pad_to_max_length)
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    return dataset, count_batches(dataset)


def build_model(task, init_checkpoint, dropout=0.1):
    """A `BertClassifier` on the pretrained encoder (call in strategy scope)."""
    encoder = BertEncoder.from_pretrained(init_checkpoint)
    return BertClassifier(encoder, task.num_classes, dropout=dropout)


def loss_and_metrics(task):
    if task.is_regression:
        return keras.losses.MeanSquaredError(), []
    return (keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            [keras.metrics.SparseCategoricalAccuracy(name="accuracy")])


def predict(model, dataset):
    """Predicted class ids [N] (scores for regression)."""
    logits = model.predict(dataset.map(lambda features, label: features),
                           verbose=0)
    return logits[:, 0] if logits.shape[-1] == 1 else np.argmax(logits, -1)


def evaluate(model, task, eval_sets):
    """Whole-set metrics for each `(split, examples, dataset)`."""
    results = {}
    for split, examples, dataset in eval_sets:
        metrics = glue_metrics.compute(task.metrics, encode_labels(task, examples),
                                       predict(model, dataset))
        metrics["num_examples"] = len(examples)
        results[split] = metrics
    return results


def write_test_predictions(model, task, examples, preprocessor, path,
                           batch_size=64):
    """Writes a GLUE submission file: `index<TAB>prediction`."""
    dataset, _ = build_dataset(examples, task, preprocessor, batch_size,
                               training=False)
    predictions = predict(model, dataset)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("index\tprediction\n")
        for example, prediction in zip(examples, predictions):
            value = (f"{float(prediction):.3f}" if task.is_regression
                     else task.labels[int(prediction)])
            f.write(f"{example.guid}\t{value}\n")
    logging.info("wrote %d predictions to %s", len(examples), path)


def export(model, task, preprocessor, export_dir):
    label_names = FLAGS.label_names or (None if task.is_regression
                                        else list(task.labels))
    if label_names is not None and len(label_names) != task.num_classes:
        raise flags.ValidationError(
            f"--label_names has {len(label_names)} names; {task.name} has "
            f"{task.num_classes} classes")
    text_inputs = ("sentence1", "sentence2") if task.is_pair else ("sentence",)
    module = ClassifierServingModule(model, preprocessor, label_names,
                                     text_inputs)
    warmup = {"serving_default": {name: np.array([b"warm up"])
                                  for name in text_inputs}}
    path = export_saved_model(module, export_dir, module.signatures(),
                              warmup_inputs=warmup)
    print(f"exported SavedModel to {path}")
    return path


def main(argv):
    del argv
    task = glue_data.get_task(FLAGS.task)
    strategy = training_flags.setup(FLAGS)
    config = training_flags.training_config(FLAGS)
    os.makedirs(FLAGS.model_dir, exist_ok=True)
    preprocessor = build_preprocessor(FLAGS.init_checkpoint, FLAGS.max_seq_length)
    with strategy.scope():
        model = build_model(task, FLAGS.init_checkpoint, FLAGS.classifier_dropout)

    eval_sets = []
    if FLAGS.do_eval or FLAGS.do_train:
        for split in task.dev_splits:
            path = glue_data.split_path(FLAGS.data_dir, task, split)
            if not os.path.exists(path) and not FLAGS.do_eval:
                continue
            examples = glue_data.read_examples(path, task)
            dataset, _ = build_dataset(examples, task, preprocessor,
                                       FLAGS.eval_batch_size, training=False)
            eval_sets.append((split, examples, dataset))

    if FLAGS.do_train:
        examples = glue_data.read_examples(
            glue_data.split_path(FLAGS.data_dir, task, "train"), task)
        if FLAGS.max_train_examples:
            examples = examples[:FLAGS.max_train_examples]
        dataset, steps = build_dataset(
            examples, task, preprocessor, FLAGS.train_batch_size, training=True,
            seed=FLAGS.seed, pad_to_max_length=FLAGS.pad_to_max_length)
        loss, metrics = loss_and_metrics(task)
        first_split = task.dev_splits[0]

        def evaluate_first_dev_split():
            return evaluate(model, task, eval_sets[:1])[first_split]
        train(model, dataset, steps_per_epoch=steps, config=config, loss=loss,
              metrics=metrics,
              evaluate_fn=evaluate_first_dev_split if eval_sets else None,
              best_metric=task.main_metric, strategy=strategy)
    else:
        restore_trained_weights(model, FLAGS.model_dir)

    chief = is_chief(strategy)
    if FLAGS.do_eval:
        results = {"task": task.name, **evaluate(model, task, eval_sets)}
        print(json.dumps(results, indent=2, sort_keys=True))
        if chief:
            with open(os.path.join(FLAGS.model_dir, "eval_results.json"), "w") as f:
                json.dump(results, f, indent=2, sort_keys=True)

    if FLAGS.do_predict and chief:
        for split, filename in task.test_splits:
            examples = glue_data.read_examples(
                glue_data.split_path(FLAGS.data_dir, task, split), task,
                labeled=False)
            write_test_predictions(model, task, examples, preprocessor,
                                   os.path.join(FLAGS.model_dir, "predictions",
                                                filename),
                                   FLAGS.eval_batch_size)
        ax_path = glue_data.find_ax_file(FLAGS.data_dir)
        if task.name == "mnli" and ax_path:
            write_test_predictions(
                model, task, glue_data.read_examples(ax_path, task, labeled=False),
                preprocessor, os.path.join(FLAGS.model_dir, "predictions", "AX.tsv"),
                FLAGS.eval_batch_size)

    if FLAGS.export_dir and chief:
        export(model, task, preprocessor, FLAGS.export_dir)


if __name__ == "__main__":
    define_flags()
    flags.mark_flags_as_required(["task", "model_dir"])
    app.run(main)
