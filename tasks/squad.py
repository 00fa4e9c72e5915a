"""Fine-tune, evaluate and export BERT on SQuAD v1.1 or v2.0.

    python -m tasks.squad --version=1.1 --train_file=F --predict_file=F \
      --init_checkpoint=minilm-l6-h384-uncased --model_dir=DIR \
      --export_dir=saved_models/squad --do_train --do_predict \
      --max_seq_length=384 --doc_stride=128 --max_query_length=64

Writes MODEL_DIR/predictions.json, nbest_predictions.json, null_odds.json
(v2.0), eval_results.json (when the predict file has answers) and a raw-text
SavedModel under EXPORT_DIR/<version>/. The functions below also work from
Python:

    tokenizer = BertTokenizer.from_pretrained("minilm-l6-h384-uncased")
    features = squad_data.convert_examples_to_features(
        squad_data.read_squad_examples(path), tokenizer, is_training=True)
    dataset, steps = build_dataset(features, 16, training=True)
    model = build_model("minilm-l6-h384-uncased")
"""

import json
import math
import os

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags, logging

from tfbert.data import squad as squad_data
from tfbert.data.squad_postprocess import postprocess_predictions
from tfbert.export import export_saved_model
from tfbert.export.squad_serving import SquadServingModule
from tfbert.metrics import squad as squad_metrics
from tfbert.models import BertEncoder, BertSpanLabeler
from tfbert.text.bert_tokenizer import BertTokenizer
from tfbert.training import flags as training_flags
from tfbert.training import is_chief, restore_trained_weights, train

FLAGS = flags.FLAGS

# Logit of padding positions (see SpanLabelingHead); pads trimmed batches.
_PAD_LOGIT = -1e9


def define_flags():
    flags.DEFINE_enum("version", "1.1", ["1.1", "2.0"],
                      "SQuAD version; 2.0 has unanswerable questions.")
    flags.DEFINE_string("train_file", None, "SQuAD JSON to train on.")
    flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict (and "
                        "evaluate, if it has answers).")
    flags.DEFINE_integer("doc_stride", 128, "Tokens between context windows.")
    flags.DEFINE_integer("max_query_length", 64,
                         "Questions are truncated to this many tokens.")
    flags.DEFINE_integer("n_best_size", 20, "Entries per nbest list.")
    flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in tokens.")
    flags.DEFINE_float("null_score_diff_threshold", 0.0,
                       "v2.0: answer \"\" when null score minus best span "
                       "score exceeds this (eval_results.json reports the "
                       "best one as best_f1_thresh).")
    training_flags.define_training_flags(max_seq_length=384,
                                         train_batch_size=16,
                                         num_train_epochs=2)


def convert(examples, tokenizer, *, is_training):
    return squad_data.convert_examples_to_features(
        examples, tokenizer, max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride, max_query_length=FLAGS.max_query_length,
        is_training=is_training)


def _trim_to_longest(features, labels):
    length = tf.reduce_max(tf.reduce_sum(features["input_mask"], axis=1))
    return {name: value[:, :length] for name, value in features.items()}, labels


def build_dataset(features, batch_size, *, training, seed=42,
                  pad_to_max_length=False):
    """Returns `(dataset, num_batches)`: one epoch of (inputs, labels)
    batches, shuffled with `seed` when training, each padded only to its
    longest feature unless `pad_to_max_length`."""
    dataset = tf.data.Dataset.from_tensor_slices(
        (features.model_inputs(), features.labels()))
    if training:
        dataset = dataset.shuffle(len(features), seed=seed,
                                  reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size)
    if not pad_to_max_length:
        dataset = dataset.map(_trim_to_longest)
    return (dataset.prefetch(tf.data.AUTOTUNE),
            math.ceil(len(features) / batch_size))


def build_model(init_checkpoint):
    """A `BertSpanLabeler` on the pretrained encoder (call in strategy scope)."""
    return BertSpanLabeler(BertEncoder.from_pretrained(init_checkpoint))


def span_loss():
    """Mean of the start and end cross-entropies, as Keras loss arguments."""
    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return ({"start_logits": cross_entropy, "end_logits": cross_entropy},
            {"start_logits": 0.5, "end_logits": 0.5})


def predict_logits(model, features, batch_size):
    """Start and end logits, float32 [N, max_seq_length] each."""
    dataset, _ = build_dataset(features, batch_size, training=False)

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
                              constant_values=_PAD_LOGIT))
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


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)


def export(model, tokenizer, export_dir):
    module = SquadServingModule(
        model, tokenizer, max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride, max_query_length=FLAGS.max_query_length,
        max_answer_length=FLAGS.max_answer_length,
        version_2_with_negative=FLAGS.version == "2.0",
        null_score_diff_threshold=FLAGS.null_score_diff_threshold)
    warmup = {"serving_default": {"question": np.array([b"Who?"]),
                                  "context": np.array([b"Nobody."])}}
    path = export_saved_model(module, export_dir, module.signatures(),
                              warmup_inputs=warmup)
    print(f"exported SavedModel to {path}")
    return path


def main(argv):
    del argv
    strategy = training_flags.setup(FLAGS)
    config = training_flags.training_config(FLAGS)
    os.makedirs(FLAGS.model_dir, exist_ok=True)
    version_2 = FLAGS.version == "2.0"
    tokenizer = BertTokenizer.from_pretrained(FLAGS.init_checkpoint)
    with strategy.scope():
        model = build_model(FLAGS.init_checkpoint)

    if FLAGS.do_train:
        if not FLAGS.train_file:
            raise flags.ValidationError("--do_train needs --train_file")
        examples = squad_data.read_squad_examples(FLAGS.train_file)
        if FLAGS.max_train_examples:
            examples = examples[:FLAGS.max_train_examples]
        if not version_2 and any(e.is_impossible for e in examples):
            raise flags.ValidationError(
                f"{FLAGS.train_file} has unanswerable questions; use "
                "--version=2.0")
        features = convert(examples, tokenizer, is_training=True)
        logging.info("%d training examples -> %d features", len(examples),
                     len(features))
        dataset, steps = build_dataset(
            features, FLAGS.train_batch_size, training=True, seed=FLAGS.seed,
            pad_to_max_length=FLAGS.pad_to_max_length)
        loss, loss_weights = span_loss()
        train(model, dataset, steps_per_epoch=steps, config=config, loss=loss,
              loss_weights=loss_weights, strategy=strategy)
    else:
        restore_trained_weights(model, FLAGS.model_dir)

    chief = is_chief(strategy)
    if FLAGS.do_predict and chief:
        if not FLAGS.predict_file:
            raise flags.ValidationError("--do_predict needs --predict_file")
        examples = squad_data.read_squad_examples(FLAGS.predict_file)
        features = convert(examples, tokenizer, is_training=False)
        start_logits, end_logits = predict_logits(model, features,
                                                  FLAGS.eval_batch_size)
        result = postprocess_predictions(
            examples, features, start_logits, end_logits,
            n_best_size=FLAGS.n_best_size,
            max_answer_length=FLAGS.max_answer_length,
            version_2_with_negative=version_2,
            null_score_diff_threshold=FLAGS.null_score_diff_threshold)
        write_json(os.path.join(FLAGS.model_dir, "predictions.json"),
                   result.predictions)
        write_json(os.path.join(FLAGS.model_dir, "nbest_predictions.json"),
                   result.nbest)
        if version_2:
            write_json(os.path.join(FLAGS.model_dir, "null_odds.json"),
                       result.null_odds)
        if any(e.answers or e.is_impossible for e in examples):
            metrics = evaluate(examples, result, version_2)
            print(json.dumps(metrics, indent=2, sort_keys=True))
            write_json(os.path.join(FLAGS.model_dir, "eval_results.json"),
                       metrics)

    if FLAGS.export_dir and chief:
        export(model, tokenizer, FLAGS.export_dir)


if __name__ == "__main__":
    define_flags()
    flags.mark_flags_as_required(["model_dir"])
    app.run(main)
