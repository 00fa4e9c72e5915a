"""Fine-tune, evaluate and export BERT for CoNLL-style named entities.

    python -m tasks.ner --train_file=train.txt --eval_file=valid.txt \
      --predict_file=test.txt --init_checkpoint=minilm-l6-h384-uncased \
      --model_dir=DIR --export_dir=saved_models/ner --do_train --do_eval \
      --do_predict --max_seq_length=128 --use_crf=false

Writes MODEL_DIR/labels.txt, MODEL_DIR/eval_results.json,
MODEL_DIR/predictions.txt (eval set: `token gold predicted`, a blank line
between sentences), MODEL_DIR/test_predictions.txt (predict set; `token
gold predicted` if it has tags, else `token predicted`) and a raw-text
SavedModel under EXPORT_DIR/<version>/ (see `tfbert.export.ner_serving`).
"""

import json
import os

import numpy as np
import tensorflow as tf
from absl import app, flags

from tfbert.data.conll import (check_tags, labels_from_sentences,
                               parse_labels, read_conll)
from tfbert.data.ner_alignment import (IGNORE_LABEL, convert_to_features,
                                       pad_batch, stitch_predictions)
from tfbert.export import export_saved_model
from tfbert.export.ner_serving import NerServingModule
from tfbert.metrics.ner import ner_metrics
from tfbert.models import BertEncoder, BertTokenClassifier
from tfbert.models.bert_token_classifier import token_classification_loss
from tfbert.text import BertTokenizer
from tfbert.training import flags as training_flags
from tfbert.training import is_chief, restore_trained_weights, train

FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_string("train_file", None, "CoNLL training file.")
    flags.DEFINE_string("eval_file", None, "CoNLL evaluation file.")
    flags.DEFINE_string("predict_file", None, "CoNLL file to tag.")
    flags.DEFINE_string("labels", None,
                        "IOB2 labels: a file (one per line) or a comma list "
                        "(default: from the training data).")
    flags.DEFINE_bool("use_crf", False, "Add a linear-chain CRF.")
    flags.DEFINE_integer("window_stride", None,
                         "WordPieces between the starts of the overlapping "
                         "windows a long sentence is cut into (default: half "
                         "a window).")
    flags.DEFINE_float("classifier_dropout", 0.1, "Dropout before the head.")
    training_flags.define_training_flags(
        max_seq_length=128, train_batch_size=32, learning_rate=5e-5,
        num_train_epochs=3.0)


def build_features(sentences, labels, tokenizer, max_seq_length,
                   window_stride=None):
    """`NerFeatures` for sentences (label ids from their tags, if any)."""
    ids = {label: i for i, label in enumerate(labels)}
    label_ids = (None if any(s.tags is None for s in sentences)
                 else [[ids[t] for t in s.tags] for s in sentences])
    return convert_to_features([s.words for s in sentences], label_ids,
                               tokenizer, max_seq_length, window_stride)


def train_dataset(features, batch_size, seed, max_seq_length=None):
    """One shuffled epoch of padded `(features, labels)` batches (padded to
    the batch's longest window, or to `max_seq_length` if given)."""
    dataset = features.dataset().cache().shuffle(
        len(features), seed=seed, reshuffle_each_iteration=True)
    shape = [max_seq_length] if max_seq_length else [None]
    return dataset.padded_batch(
        batch_size,
        padded_shapes=({k: shape for k in ("input_word_ids", "input_mask",
                                           "input_type_ids")}, shape),
        padding_values=({k: 0 for k in ("input_word_ids", "input_mask",
                                        "input_type_ids")}, IGNORE_LABEL)
    ).prefetch(tf.data.AUTOTUNE)


def predict_tags(model, features, labels, batch_size=64):
    """Runs the model on every window and returns one tag list per sentence
    (windows sorted by length so batches pad little)."""
    order = np.argsort([len(ids) for ids in features.input_word_ids],
                       kind="stable")
    token_tags = [None] * len(features)
    for begin in range(0, len(order), batch_size):
        rows = order[begin:begin + batch_size]
        ids = pad_batch([features.input_word_ids[r] for r in rows], 0)
        word_mask = pad_batch([features.word_index[r] for r in rows], -1) >= 0
        inputs = {"input_word_ids": ids,
                  "input_mask": (pad_batch(
                      [np.ones_like(features.input_word_ids[r]) for r in rows],
                      0)),
                  "input_type_ids": np.zeros_like(ids)}
        logits = model(inputs, training=False)
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


def resolve_labels(train_sentences):
    if FLAGS.labels:
        labels = parse_labels(FLAGS.labels)
    elif train_sentences is not None:
        labels = labels_from_sentences(train_sentences)
    else:
        path = os.path.join(FLAGS.model_dir, "labels.txt")
        if not os.path.exists(path):
            raise flags.ValidationError(
                "give --labels or --train_file (no labels.txt in --model_dir)")
        labels = parse_labels(path)
    return labels


def main(argv):
    del argv
    strategy = training_flags.setup(FLAGS)
    config = training_flags.training_config(FLAGS)
    os.makedirs(FLAGS.model_dir, exist_ok=True)
    chief = is_chief(strategy)
    tokenizer = BertTokenizer.from_pretrained(FLAGS.init_checkpoint)

    train_sentences = None
    if FLAGS.do_train:
        if not FLAGS.train_file:
            raise flags.ValidationError("--do_train needs --train_file")
        train_sentences = read_conll(FLAGS.train_file)
        if FLAGS.max_train_examples:
            train_sentences = train_sentences[:FLAGS.max_train_examples]
    labels = resolve_labels(train_sentences)
    if train_sentences is not None:
        check_tags(train_sentences, labels)
    eval_sentences = None
    if FLAGS.do_eval:
        if not FLAGS.eval_file:
            raise flags.ValidationError("--do_eval needs --eval_file")
        eval_sentences = read_conll(FLAGS.eval_file)
        check_tags(eval_sentences, labels)
    if chief:
        with open(os.path.join(FLAGS.model_dir, "labels.txt"), "w") as f:
            f.write("\n".join(labels) + "\n")

    with strategy.scope():
        encoder = BertEncoder.from_pretrained(FLAGS.init_checkpoint)
        model = BertTokenClassifier(encoder, len(labels),
                                    dropout=FLAGS.classifier_dropout,
                                    use_crf=FLAGS.use_crf, labels=labels)

    if FLAGS.do_train:
        features = build_features(train_sentences, labels, tokenizer,
                                  FLAGS.max_seq_length, FLAGS.window_stride)
        dataset = train_dataset(
            features, FLAGS.train_batch_size, FLAGS.seed,
            FLAGS.max_seq_length if FLAGS.pad_to_max_length else None)
        steps = -(-len(features) // FLAGS.train_batch_size)
        train(model, dataset, steps_per_epoch=steps, config=config,
              loss=None if FLAGS.use_crf else token_classification_loss,
              strategy=strategy)
    else:
        restore_trained_weights(model, FLAGS.model_dir)

    if FLAGS.do_eval:
        sentences = eval_sentences
        features = build_features(sentences, labels, tokenizer,
                                  FLAGS.max_seq_length, FLAGS.window_stride)
        predicted = predict_tags(model, features, labels,
                                 FLAGS.eval_batch_size)
        results = ner_metrics([s.tags for s in sentences], predicted)
        results.update(num_sentences=len(sentences),
                       num_windows=len(features), use_crf=FLAGS.use_crf)
        print(json.dumps(results, indent=2, sort_keys=True))
        if chief:
            with open(os.path.join(FLAGS.model_dir, "eval_results.json"),
                      "w") as f:
                json.dump(results, f, indent=2, sort_keys=True)
            write_predictions(os.path.join(FLAGS.model_dir, "predictions.txt"),
                              sentences, predicted)

    if FLAGS.do_predict and chief:
        if not FLAGS.predict_file:
            raise flags.ValidationError("--do_predict needs --predict_file")
        sentences = read_conll(FLAGS.predict_file, require_tags=False)
        if sentences and sentences[0].tags is not None:
            check_tags(sentences, labels)
        features = build_features(sentences, labels, tokenizer,
                                  FLAGS.max_seq_length, FLAGS.window_stride)
        write_predictions(
            os.path.join(FLAGS.model_dir, "test_predictions.txt"), sentences,
            predict_tags(model, features, labels, FLAGS.eval_batch_size))

    if FLAGS.export_dir and chief:
        module = NerServingModule(model, tokenizer, labels,
                                  FLAGS.max_seq_length)
        path = export_saved_model(
            module, FLAGS.export_dir, module.signatures(),
            warmup_inputs={"serving_default": {
                "text": np.array([b"John Smith lives in Paris."])}})
        print(f"exported SavedModel to {path}")


if __name__ == "__main__":
    define_flags()
    flags.mark_flags_as_required(["model_dir"])
    app.run(main)
