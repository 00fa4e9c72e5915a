r"""Masked-LM + next-sentence pretraining, from scratch or continued.

Static data (TFRecords from `tasks.create_pretraining_data`):

    python -m tasks.pretraining --input_file='/tmp/pretrain.tfrecord*' \
      --init_checkpoint=minilm-l6-h384-uncased --model_dir=/tmp/pt \
      --do_train --num_train_steps=10000 --export_dir=/tmp/pt/export

Dynamic masking (raw corpus; new pairs and masks every epoch):

    python -m tasks.pretraining --corpus_file='corpus/*.txt' \
      --vocab_file=vocab.txt --bert_config_file=config.json \
      --model_dir=/tmp/pt --do_train --do_eval --eval_corpus_file=held_out.txt

`--init_checkpoint` is any checkpoint `load_pretrainer` reads; head weights it
lacks (e.g. the MiniLM package has no MLM/NSP head) start random, which is
logged. `--bert_config_file` trains a fresh model of that shape instead;
a preset without weights (`bert-mini-uncased`) does too, sized to the
vocabulary. `--export_dir` writes the encoder and heads as an HF-layout
checkpoint with the vocabulary, which `--init_checkpoint` of the GLUE,
SQuAD and NER tasks (and of this task) accepts.
"""

import json
import math
import os

import keras
import tensorflow as tf
from absl import app, flags, logging

from tfbert.checkpoints import load_pretrainer, read_checkpoint, save_pretrainer
from tfbert.config import BertConfig
from tfbert.data import pretraining
from tfbert.metrics.masked_lm import MaskedLMAccuracy
from tfbert.models import BertEncoder, BertPretrainer
from tfbert.text import BertTokenizer
from tfbert.training import flags as training_flags
from tfbert.training import is_chief, train

FLAGS = flags.FLAGS


def define_flags():
    training_flags.define_training_flags(
        max_seq_length=128, train_batch_size=32, learning_rate=1e-4,
        num_train_epochs=1.0)
    flags.DEFINE_string("input_file", None,
                        "Static TFRecord glob(s), comma-separated.")
    flags.DEFINE_string("corpus_file", None,
                        "Raw corpus glob(s) for dynamic masking.")
    flags.DEFINE_string("eval_input_file", None, "Static eval TFRecords.")
    flags.DEFINE_string("eval_corpus_file", None,
                        "Raw eval corpus (masked once, with --seed).")
    flags.DEFINE_integer("num_train_steps", 0,
                         "Train this many batches (overrides "
                         "--num_train_epochs).")
    flags.DEFINE_integer("max_predictions_per_seq", 20,
                         "Most masked tokens per sequence.")
    flags.DEFINE_float("masked_lm_prob", 0.15, "Dynamic masking rate.")
    flags.DEFINE_float("short_seq_prob", 0.1, "Dynamic short-sequence rate.")
    flags.DEFINE_bool("do_whole_word_mask", False, "Dynamic whole-word masks.")
    flags.DEFINE_string("vocab_file", None,
                        "vocab.txt (default: the checkpoint's).")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case with --vocab_file.")
    flags.DEFINE_string("bert_config_file", None,
                        "Train from scratch with this architecture.")


def load_tokenizer():
    if FLAGS.vocab_file:
        return BertTokenizer(FLAGS.vocab_file, lowercase=FLAGS.do_lower_case)
    return BertTokenizer.from_pretrained(FLAGS.init_checkpoint)


def build_model(tokenizer):
    """The `BertPretrainer` the flags ask for (call in strategy scope)."""
    if FLAGS.bert_config_file:
        config = BertConfig.from_json_file(FLAGS.bert_config_file)
        if config.vocab_size != tokenizer.vocab_size:
            raise ValueError(
                f"{FLAGS.bert_config_file}: vocab_size={config.vocab_size} "
                f"but the vocabulary has {tokenizer.vocab_size} tokens")
        logging.info("pretraining from scratch: %s", config)
        return BertPretrainer(BertEncoder(config))
    checkpoint = read_checkpoint(FLAGS.init_checkpoint)
    if not checkpoint.weights:
        logging.info("%s has no weights: pretraining from scratch",
                     FLAGS.init_checkpoint)
        return load_pretrainer(FLAGS.init_checkpoint,
                               vocab_size=tokenizer.vocab_size)
    if checkpoint.config.vocab_size != tokenizer.vocab_size:
        raise ValueError(
            f"--init_checkpoint={FLAGS.init_checkpoint} has vocab_size="
            f"{checkpoint.config.vocab_size} but the vocabulary has "
            f"{tokenizer.vocab_size} tokens")
    heads = sorted({name.split("/")[1] for name in checkpoint.weights
                    if name.startswith("cls/")})
    for head, name in (("predictions", "masked-LM"),
                       ("seq_relationship", "next-sentence")):
        if head not in heads:
            logging.warning("%s has no %s head: it starts randomly initialised",
                            FLAGS.init_checkpoint, name)
    return load_pretrainer(FLAGS.init_checkpoint)


def build_dataset(tokenizer, input_file, corpus_file, batch_size, *,
                  training, seed):
    """`(dataset of (x, y, sample_weight), batches per epoch)`."""
    if bool(input_file) == bool(corpus_file):
        raise flags.ValidationError(
            "pass exactly one of --input_file (static TFRecords) and "
            "--corpus_file (raw text, dynamic masking) (and likewise for eval)")
    if input_file:
        dataset = pretraining.pretraining_dataset(
            input_file, batch_size, max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            shuffle=training, seed=seed)
        steps = sum(1 for _ in dataset)
    else:
        documents = pretraining.tokenize_documents(
            pretraining.read_corpus(corpus_file.split(",")), tokenizer)
        dataset = pretraining.dynamic_pretraining_dataset(
            documents, tokenizer, batch_size,
            max_seq_length=FLAGS.max_seq_length,
            short_seq_prob=FLAGS.short_seq_prob,
            masking=pretraining.MaskingConfig(
                max_predictions_per_seq=FLAGS.max_predictions_per_seq,
                masked_lm_prob=FLAGS.masked_lm_prob,
                whole_word_mask=FLAGS.do_whole_word_mask),
            seed=seed)
        if not training:
            # Fixed masks: the same held-out batches for every evaluation.
            dataset = dataset.cache()
        steps = sum(1 for _ in dataset)
    if steps == 0:
        raise ValueError("the data gives no full batch; lower the batch size")
    return dataset.map(pretraining.model_inputs), steps


def loss_and_metrics(pad_id):
    """Weighted masked-LM loss (mean over real predictions) + NSP loss, and
    the accuracy of each."""
    loss = {
        "masked_lm_logits": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"),
        "next_sentence_logits": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True),
    }
    metrics = {
        "masked_lm_logits": [MaskedLMAccuracy(ignore_id=pad_id)],
        "next_sentence_logits": [keras.metrics.SparseCategoricalAccuracy(
            name="next_sentence_accuracy")],
    }
    return loss, metrics


_RESULT_NAMES = {
    "loss": "loss",
    "masked_lm_logits_loss": "masked_lm_loss",
    "masked_lm_logits_masked_lm_accuracy": "masked_lm_accuracy",
    "next_sentence_logits_loss": "next_sentence_loss",
    "next_sentence_logits_next_sentence_accuracy": "next_sentence_accuracy",
}


def evaluate(model, dataset):
    """`loss`, `masked_lm_loss`, `masked_lm_accuracy`, `next_sentence_loss`
    and `next_sentence_accuracy` over `dataset` (a dict of floats)."""
    results = model.evaluate(dataset, verbose=0, return_dict=True)
    return {_RESULT_NAMES.get(name, name): float(value)
            for name, value in results.items()}


def main(argv):
    del argv
    strategy = training_flags.setup(FLAGS)
    config = training_flags.training_config(FLAGS)
    os.makedirs(FLAGS.model_dir, exist_ok=True)
    tokenizer = load_tokenizer()
    with strategy.scope():
        model = build_model(tokenizer)
    loss, metrics = loss_and_metrics(tokenizer.pad_id)

    eval_dataset = None
    if FLAGS.do_eval:
        eval_dataset, _ = build_dataset(
            tokenizer, FLAGS.eval_input_file, FLAGS.eval_corpus_file,
            FLAGS.eval_batch_size, training=False, seed=FLAGS.seed)

    if FLAGS.do_train:
        dataset, steps = build_dataset(
            tokenizer, FLAGS.input_file, FLAGS.corpus_file,
            FLAGS.train_batch_size, training=True, seed=FLAGS.seed)
        if FLAGS.num_train_steps:
            config.num_train_epochs = FLAGS.num_train_steps / steps
            config.checkpoint_steps = config.checkpoint_steps or min(
                steps, FLAGS.num_train_steps)
        logging.info("%d batches per epoch, %d batches in all", steps,
                     math.ceil(config.num_train_epochs * steps))
        train(model, dataset, steps_per_epoch=steps, config=config, loss=loss,
              metrics=metrics, strategy=strategy)
    else:
        latest = tf.train.latest_checkpoint(
            os.path.join(FLAGS.model_dir, "checkpoints"))
        if latest is not None:
            tf.train.Checkpoint(model=model).restore(latest).expect_partial()
        with strategy.scope():
            model.compile(loss=loss, metrics=metrics)

    chief = is_chief(strategy)
    if FLAGS.do_eval:
        results = evaluate(model, eval_dataset)
        print(json.dumps(results, indent=2, sort_keys=True))
        if chief:
            with open(os.path.join(FLAGS.model_dir, "eval_results.json"),
                      "w") as f:
                json.dump(results, f, indent=2, sort_keys=True)

    if FLAGS.export_dir and chief:
        save_pretrainer(model, FLAGS.export_dir, tokenizer)
        print(f"exported the encoder and heads to {FLAGS.export_dir}")


if __name__ == "__main__":
    define_flags()
    flags.mark_flags_as_required(["model_dir"])
    app.run(main)
