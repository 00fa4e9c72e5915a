r"""Pretraining benchmarks on the shared Wikipedia sample (CPU-sized).

    nice -n 5 python -m benchmarks.pretraining --work_dir=/tmp/ptbench \
      --stage=scratch --budget_seconds=900
    nice -n 5 python -m benchmarks.pretraining --work_dir=/tmp/ptbench --stage=sst2
    nice -n 5 python -m benchmarks.pretraining --work_dir=/tmp/ptbench --stage=minilm

Stages (each prints a JSON line of results):
  scratch: corpus + WordPiece vocab from the Wikipedia files (last 20
    articles held out), data-creation throughput, then a small BERT trained
    from scratch with dynamic masking for a fixed wall-clock budget, with
    held-out MLM/NSP accuracy every --eval_every steps (the curve) and the
    training step throughput; the encoder is saved for the sst2 stage, the
    results to WORK_DIR/scratch_results.json and the curves to
    WORK_DIR/pretraining_curves.png (needs matplotlib: `pip install
    .[bench]`).
  sst2: fine-tunes the pretrained encoder and the same config randomly
    initialised on a slice of SST-2 train; accuracy on SST-2 dev.
  minilm: held-out MLM accuracy of minilm-l6-h384-uncased before and after
    continued pretraining. Its package has no MLM/NSP heads, so "before" is
    measured with heads fitted to the frozen encoder (`--head_steps`), and
    the control trains those heads for `--minilm_steps` more with the encoder
    still frozen, while the continued run trains every weight for the same
    steps from the same state.
"""

import importlib
import json
import os
import shutil
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from tfbert.checkpoints import load_pretrainer, save_encoder
from tfbert.config import BertConfig
from tfbert.data import pretraining
from tfbert.data.wikipedia import convert_wikiextractor
from tfbert.models import BertClassifier, BertEncoder, BertPretrainer
from tfbert.text import BertPreprocessor, BertTokenizer
from tfbert.text.vocab_builder import build_vocabulary_file
from tfbert.training import TrainingConfig, train

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "..", "shared", "data")
FLAGS = flags.FLAGS
# The task code this benchmark drives, as a CLI (`python -m`) and as a
# library: the one place to change when it moves.
PRETRAINING_TASK = "tfbert_cli.pretraining"


def pretraining_task():
    """The pretraining task module (imported on first use: it imports TensorFlow)."""
    return importlib.import_module(PRETRAINING_TASK)


def corpus(work_dir, data_dir):
    full = os.path.join(work_dir, "wiki.txt")
    if not os.path.exists(full):
        convert_wikiextractor(os.path.join(
            data_dir, "wikipedia/enwiki-wikiextractor/AA/wiki_*"), full)
    documents = pretraining.read_corpus(full)
    return documents[:-20], documents[-20:]


def eval_batches(documents, tokenizer, seq, predictions, batch=32):
    return list(pretraining.dynamic_pretraining_dataset(
        pretraining.tokenize_documents(documents, tokenizer), tokenizer, batch,
        max_seq_length=seq, short_seq_prob=0.0,
        masking=pretraining.MaskingConfig(max_predictions_per_seq=predictions),
        seed=99))


def unigram_baseline(batches):
    """Held-out MLM accuracy of always predicting the most frequent masked
    token of the held-out set itself (an optimistic unigram baseline)."""
    ids = np.concatenate([b["masked_lm_ids"].numpy()[
        b["masked_lm_weights"].numpy() > 0] for b in batches])
    return float(np.bincount(ids).max() / len(ids))


def accuracy(model, batches):
    hits = total = nsp_hits = nsp_total = 0
    for batch in batches:
        x, _, _ = pretraining.model_inputs(batch)
        out = model(x, training=False)
        weights = batch["masked_lm_weights"].numpy() > 0
        hits += (out["masked_lm_logits"].numpy().argmax(-1)
                 == batch["masked_lm_ids"].numpy())[weights].sum()
        total += weights.sum()
        nsp_hits += (out["next_sentence_logits"].numpy().argmax(-1)
                     == batch["next_sentence_labels"].numpy()).sum()
        nsp_total += len(batch["next_sentence_labels"])
    return float(hits / total), float(nsp_hits / nsp_total)


class Curve(keras.callbacks.Callback):
    """Held-out accuracy every `every` batches; stops after `budget` s."""

    def __init__(self, batches, every, budget):
        super().__init__()
        self.batches, self.every, self.budget = batches, every, budget
        self.points, self.steps = [], 0

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        elapsed = time.perf_counter() - self.start
        if self.steps % self.every == 0 or elapsed > self.budget:
            mlm, nsp = accuracy(self.model, self.batches)
            self.points.append({"step": self.steps, "seconds": round(elapsed),
                                "mlm_accuracy": round(mlm, 4),
                                "nsp_accuracy": round(nsp, 4)})
            print(json.dumps(self.points[-1]), flush=True)
            self.start += time.perf_counter() - self.start - elapsed
        if elapsed > self.budget:
            self.model.stop_training = True


def stage_scratch(args):
    train_docs, eval_docs = corpus(args.work_dir, args.data_dir)
    vocab_path = os.path.join(args.work_dir, "vocab.txt")
    results = {}
    if not os.path.exists(vocab_path):
        text = os.path.join(args.work_dir, "train.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write("\n\n".join("\n".join(d) for d in train_docs) + "\n")
        start = time.perf_counter()
        build_vocabulary_file([text], vocab_path, args.vocab_size)
        results["vocab_seconds"] = round(time.perf_counter() - start, 1)
    tokenizer = BertTokenizer(vocab_path)
    start = time.perf_counter()
    documents = pretraining.tokenize_documents(train_docs, tokenizer)
    tokenize_seconds = time.perf_counter() - start
    start = time.perf_counter()
    instances = pretraining.create_instances(
        documents, tokenizer, max_seq_length=args.seq, dupe_factor=1,
        masking=pretraining.MaskingConfig(whole_word_mask=True))
    create_seconds = time.perf_counter() - start
    results["data_creation"] = {
        "instances": len(instances),
        "tokenize_seconds": round(tokenize_seconds, 1),
        "instances_per_second": round(len(instances) / create_seconds)}
    print(json.dumps(results), flush=True)

    keras.utils.set_random_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size,
                        hidden_size=args.hidden, num_layers=args.layers,
                        num_heads=args.hidden // 64,
                        intermediate_size=4 * args.hidden)
    model = BertPretrainer(BertEncoder(config))
    loss, metrics = pretraining_task().loss_and_metrics(tokenizer.pad_id)
    dataset = pretraining.dynamic_pretraining_dataset(
        documents, tokenizer, args.batch, max_seq_length=args.seq,
        seed=0).map(pretraining.model_inputs).prefetch(4)
    held_out = eval_batches(eval_docs, tokenizer, args.seq, 20)
    curve = Curve(held_out, args.eval_every, args.budget_seconds)
    curve.points.append(dict(zip(("mlm_accuracy", "nsp_accuracy"),
                                 accuracy(model, held_out)), step=0, seconds=0))
    model_dir = os.path.join(args.work_dir, "scratch_model")
    start = time.perf_counter()
    train(model, dataset, steps_per_epoch=args.steps,
          config=TrainingConfig(model_dir=model_dir, num_train_epochs=1,
                                learning_rate=args.learning_rate,
                                warmup_proportion=0.05, verbose=0),
          loss=loss, metrics=metrics, callbacks=[curve])
    seconds = time.perf_counter() - start
    results.update(config=f"L{args.layers} H{args.hidden} seq {args.seq} "
                   f"batch {args.batch}", steps=curve.steps,
                   mlm_unigram_baseline=round(unigram_baseline(held_out), 4),
                   train_seconds=round(seconds),
                   sequences_per_second=round(curve.steps * args.batch / seconds, 1),
                   curve=curve.points)
    save_encoder(model.encoder, os.path.join(args.work_dir, "scratch_encoder"),
                 tokenizer)
    with open(os.path.join(args.work_dir, "scratch_results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results), flush=True)
    plot_curves(results, os.path.join(args.work_dir, "pretraining_curves.png"))


def plot_curves(results, path):
    """Held-out MLM and NSP accuracy against training seconds, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    points = results["curve"]
    seconds = [p["seconds"] for p in points]
    figure, axes = pyplot.subplots(1, 2, figsize=(9, 3.5))
    for axis, key, title in ((axes[0], "mlm_accuracy", "masked LM"),
                             (axes[1], "nsp_accuracy", "next sentence")):
        axis.plot(seconds, [p[key] for p in points], marker="o")
        axis.set_xlabel("training seconds (2-core CPU)")
        axis.set_ylabel("held-out accuracy")
        axis.set_title(title)
        axis.grid(alpha=0.3)
    axes[1].axhline(0.5, color="grey", linestyle="--", linewidth=1)
    figure.suptitle(f"From scratch: {results['config']}, {results['steps']} "
                    "steps")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"wrote {path}", flush=True)


def read_sst2(path, limit=None):
    lines = open(path, encoding="utf-8").read().splitlines()[1:]
    rows = [line.rsplit("\t", 1) for line in lines][:limit]
    return [r[0] for r in rows], np.array([int(r[1]) for r in rows])


def stage_sst2(args):
    directory = os.path.join(args.work_dir, "scratch_encoder")
    tokenizer = BertTokenizer.from_pretrained(directory)
    preprocessor = BertPreprocessor(tokenizer, seq_length=64)
    rng = np.random.default_rng(0)
    texts, labels = read_sst2(os.path.join(args.data_dir, "glue/SST-2/train.tsv"))
    pick = rng.permutation(len(texts))[:args.sst2_examples]
    texts, labels = [texts[i] for i in pick], labels[pick]
    dev_texts, dev_labels = read_sst2(os.path.join(args.data_dir,
                                                   "glue/SST-2/dev.tsv"))
    x = preprocessor(tf.constant(texts))
    dev_x = preprocessor(tf.constant(dev_texts))
    train_set = tf.data.Dataset.from_tensor_slices((dict(x), labels)).shuffle(
        len(texts), seed=0).batch(32)
    results = {}
    for name in ("pretrained", "random_init"):
        keras.utils.set_random_seed(0)
        encoder = BertEncoder.from_pretrained(directory)
        if name == "random_init":
            encoder = BertEncoder(encoder.config)
        model = BertClassifier(encoder, 2)
        train(model, train_set, steps_per_epoch=len(texts) // 32,
              config=TrainingConfig(
                  model_dir=os.path.join(args.work_dir, f"sst2_{name}"),
                  num_train_epochs=args.sst2_epochs, learning_rate=1e-4,
                  verbose=0),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
        logits = model.predict(dict(dev_x), batch_size=128, verbose=0)
        results[name] = round(float((logits.argmax(-1) == dev_labels).mean()), 4)
        print(json.dumps({name: results[name]}), flush=True)
    print(json.dumps({"sst2_dev_accuracy": results,
                      "train_examples": len(texts),
                      "epochs": args.sst2_epochs}), flush=True)


def stage_minilm(args):
    train_docs, eval_docs = corpus(args.work_dir, args.data_dir)
    tokenizer = BertTokenizer.from_pretrained("minilm-l6-h384-uncased")
    keras.utils.set_random_seed(0)
    model = load_pretrainer("minilm-l6-h384-uncased")
    held_out = eval_batches(eval_docs, tokenizer, 128, 20, batch=16)[:args.eval_batches]
    loss, metrics = pretraining_task().loss_and_metrics(tokenizer.pad_id)
    documents = pretraining.tokenize_documents(train_docs, tokenizer)
    dataset = pretraining.dynamic_pretraining_dataset(
        documents, tokenizer, 16, max_seq_length=128, seed=0).map(
            pretraining.model_inputs)
    results = {"held_out_predictions": int(sum(
        (b["masked_lm_weights"].numpy() > 0).sum() for b in held_out)),
        "batch": 16, "head_steps": args.head_steps,
        "minilm_steps": args.minilm_steps}

    def held_out_scores():
        mlm, nsp = accuracy(model, held_out)
        return {"mlm_accuracy": round(mlm, 4), "nsp_accuracy": round(nsp, 4)}

    def fit(name, batches, skip, encoder_trainable):
        model.encoder.trainable = encoder_trainable
        model_dir = os.path.join(args.work_dir, f"minilm_{name}")
        # Each phase starts from the state set here, never from an old run.
        shutil.rmtree(model_dir, ignore_errors=True)
        start = time.perf_counter()
        train(model, dataset.skip(skip).take(batches), steps_per_epoch=batches,
              config=TrainingConfig(
                  model_dir=model_dir,
                  num_train_epochs=1, learning_rate=args.minilm_learning_rate,
                  verbose=0),
              loss=loss, metrics=metrics)
        seconds = time.perf_counter() - start
        results[name] = dict(
            held_out_scores(),
            sequences_per_second=round(16 * batches / seconds, 1))
        print(json.dumps({name: results[name]}), flush=True)

    results["random_heads"] = held_out_scores()
    fit("before_heads_fitted", args.head_steps, 0, encoder_trainable=False)
    state = model.get_weights()  # every weight, heads fitted
    fit("control_heads_only", args.minilm_steps, args.head_steps,
        encoder_trainable=False)
    model.set_weights(state)
    fit("after_continued", args.minilm_steps, args.head_steps,
        encoder_trainable=True)
    print(json.dumps(results), flush=True)


def define_flags():
    flags.DEFINE_enum("stage", None, ["scratch", "sst2", "minilm"],
                      "Which stage to run.")
    flags.DEFINE_string("work_dir", None, "Corpus, vocabulary, checkpoints.")
    flags.DEFINE_string("data_dir", os.path.normpath(DATA),
                        "The Wikipedia sample.")
    flags.DEFINE_integer("vocab_size", 8000, "WordPiece vocabulary size.")
    flags.DEFINE_integer("layers", 4, "Encoder layers (scratch).")
    flags.DEFINE_integer("hidden", 256, "Hidden size (scratch).")
    flags.DEFINE_integer("seq", 128, "Tokens per instance.")
    flags.DEFINE_integer("steps", 2000,
                         "Schedule length (LR decay) of the scratch run.")
    flags.DEFINE_integer("batch", 32, "Batch size (scratch).")
    flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate (scratch).")
    flags.DEFINE_float("budget_seconds", 900,
                       "Training time budget of the scratch run.")
    flags.DEFINE_integer("eval_every", 100, "Steps between held-out scores.")
    flags.DEFINE_integer("sst2_examples", 4000, "SST-2 training sentences.")
    flags.DEFINE_float("sst2_epochs", 2, "SST-2 epochs.")
    flags.DEFINE_integer("head_steps", 150,
                         "Steps fitting MiniLM's new heads, encoder frozen.")
    flags.DEFINE_integer("minilm_steps", 150,
                         "Steps of each later MiniLM phase.")
    flags.DEFINE_float("minilm_learning_rate", 1e-4,
                       "Peak learning rate of the MiniLM phases.")
    flags.DEFINE_integer("eval_batches", 20, "Held-out batches per score.")


def main(argv):
    del argv
    args = FLAGS
    os.makedirs(args.work_dir, exist_ok=True)
    {"scratch": stage_scratch, "sst2": stage_sst2,
     "minilm": stage_minilm}[args.stage](args)


if __name__ == "__main__":
    define_flags()
    flags.mark_flags_as_required(["stage", "work_dir"])
    app.run(main)
