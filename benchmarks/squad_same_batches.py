"""SQuAD fine-tuning, tfbert vs HF PyTorch on IDENTICAL batches.

    PYTHONPATH=. python -m benchmarks.squad_same_batches --framework=tfbert \
      --dropout=0.1 --seed=42 --out=runs/squad_same_batches
    PYTHONPATH=. python -m benchmarks.squad_same_batches --framework=torch \
      --dropout=0.1 --seed=42 --out=runs/squad_same_batches

A controlled version of `benchmarks/squad.py`: both frameworks see the same
features in the same batch order (one permutation from `--order_seed`), start
from the same span-head weights (tfbert's initialisation, saved by the tfbert
run and loaded by the torch run — run tfbert first), minimise the same
objective (start/end cross-entropy with padding masked out of the softmax, as
tfbert's head does) with the same optimizer settings (AdamW, epsilon 1e-8,
weight decay 0.01 without bias/LayerNorm, clipping 1.0, 10 % warmup then
linear decay) and are scored by the same post-processing and metric code.
tfbert trains through `tfbert.training.train` (Keras `fit`). With
`--dropout=0` the only remaining difference is floating-point rounding; with
dropout the random masks differ too, unless `--shared_masks` makes both draw
the same masks. Prints one JSON line.
"""

import dataclasses
import json
import math
import os
import shutil
import time

import numpy as np
from absl import app, flags

from benchmarks import squad as squad_benchmark
from benchmarks.squad import define_run_flags, split_by_article, squad_task

FLAGS = flags.FLAGS


def load_features(args):
    from tfbert.data import squad
    from tfbert.text.bert_tokenizer import BertTokenizer

    paths = split_by_article(args.out)
    tokenizer = BertTokenizer.from_pretrained(args.checkpoint)
    convert = dict(tokenizer=tokenizer, max_seq_length=args.max_seq_length,
                   doc_stride=args.doc_stride)
    train_examples = squad.read_squad_examples(
        paths["train"])[:args.max_train_examples]
    train = squad.convert_examples_to_features(train_examples, is_training=True,
                                               **convert)
    eval_examples = squad.read_squad_examples(paths["eval"])
    return (train, eval_examples,
            squad.convert_examples_to_features(eval_examples, **convert))


def run_tfbert(args, features, eval_features, head_path):
    import keras

    from tfbert.models import BertEncoder, BertSpanLabeler
    from tfbert.training import TrainingConfig, train

    keras.utils.set_random_seed(args.seed)
    model = BertSpanLabeler(BertEncoder.from_pretrained(
        args.checkpoint, hidden_dropout=args.dropout,
        attention_dropout=args.attention_dropout))
    if args.shared_masks:
        from benchmarks.shared_dropout import install_keras

        install_keras(model.encoder, args.seed)
    kernel, bias = (w.numpy() for w in model.head.dense.weights)
    np.savez(head_path, kernel=kernel, bias=bias)
    # training=False: the features are already in the shared batch order.
    dataset, steps = squad_task().build_dataset(features, args.batch_size,
                                              training=False)
    loss, loss_weights = squad_task().span_loss()
    model_dir = os.path.join(args.out, "tfbert_run")
    shutil.rmtree(model_dir, ignore_errors=True)  # never resume an old run
    config = TrainingConfig(
        model_dir=model_dir,
        num_train_epochs=1.0, learning_rate=args.learning_rate,
        adam_epsilon=1e-8, seed=args.seed, verbose=2)
    history = train(model, dataset, steps_per_epoch=steps, config=config,
                    loss=loss, loss_weights=loss_weights)
    return (squad_task().predict_logits(model, eval_features, 64),
            history.history["loss"][-1])


def run_torch(args, features, eval_features, head_path):
    import torch
    from transformers import BertForQuestionAnswering

    from benchmarks import torch_reference
    from benchmarks.squad import torch_inputs, torch_span_logits
    from tfbert.presets import get_preset

    torch.manual_seed(args.seed)
    model = BertForQuestionAnswering.from_pretrained(
        str(get_preset(args.checkpoint).directory()),
        hidden_dropout_prob=args.dropout,
        attention_probs_dropout_prob=args.attention_dropout)
    if args.shared_masks:
        from benchmarks.shared_dropout import install_torch

        install_torch(model, args.seed)
    head = np.load(head_path)
    with torch.no_grad():
        model.qa_outputs.weight.copy_(torch.from_numpy(head["kernel"].T))
        model.qa_outputs.bias.copy_(torch.from_numpy(head["bias"]))
    batches = [np.arange(begin, min(len(features), begin + args.batch_size))
               for begin in range(0, len(features), args.batch_size)]

    def loss(model, rows):
        inputs = torch_inputs(features, rows)
        out = model(**inputs)
        padding = (1 - inputs["attention_mask"].float()) * -1e9
        cross_entropy = torch.nn.functional.cross_entropy
        return 0.5 * (
            cross_entropy(out.start_logits + padding,
                          torch.from_numpy(features.start_positions[rows]).long())
            + cross_entropy(out.end_logits + padding,
                            torch.from_numpy(features.end_positions[rows]).long()))
    losses = torch_reference.train(model, batches, loss,
                                   learning_rate=args.learning_rate,
                                   epsilon=1e-8)
    return torch_span_logits(model, eval_features), float(np.mean(losses))


def define_flags():
    define_run_flags()
    # --help lists the shared flags too.
    flags.adopt_module_key_flags(squad_benchmark)
    flags.DEFINE_enum("framework", None, ["tfbert", "torch"],
                      "Which side to train (tfbert first: it saves the head).")
    flags.DEFINE_string("out", "runs/squad_same_batches", "Output directory.")
    flags.DEFINE_float("dropout", 0.1,
                       "Hidden-state dropout (embeddings, attention output, "
                       "FFN output).")
    flags.DEFINE_float("attention_dropout", None,
                       "Dropout on attention probabilities; default --dropout.")
    flags.DEFINE_integer("seed", 42,
                         "Weights of the head (tfbert run) and dropout.")
    flags.DEFINE_bool("shared_masks", False,
                      "Both frameworks draw the same dropout masks "
                      "(benchmarks/shared_dropout.py).")
    flags.DEFINE_integer("order_seed", 42, "Seed of the one batch order.")


def main(argv):
    del argv
    args = FLAGS
    if args.attention_dropout is None:
        args.attention_dropout = args.dropout
    os.makedirs(args.out, exist_ok=True)

    from tfbert.data.squad import SquadFeatures
    from tfbert.data.squad_postprocess import postprocess_predictions
    from tfbert.metrics.squad import squad_v1_metrics

    train, eval_examples, eval_features = load_features(args)
    order = np.random.default_rng(args.order_seed).permutation(len(train))
    shuffled = SquadFeatures(**{field.name: getattr(train, field.name)[order]
                                for field in dataclasses.fields(train)})
    head_path = os.path.join(args.out, f"head_seed{args.seed}.npz")
    run = run_tfbert if args.framework == "tfbert" else run_torch
    start = time.perf_counter()
    (start_logits, end_logits), train_loss = run(
        args, shuffled, eval_features, head_path)
    result = postprocess_predictions(eval_examples, eval_features,
                                     start_logits, end_logits)
    metrics = squad_v1_metrics(eval_examples, result.predictions)
    print(json.dumps({"framework": args.framework, "dropout": args.dropout,
                      "attention_dropout": args.attention_dropout,
                      "seed": args.seed, "shared_masks": args.shared_masks,
                      "steps": math.ceil(len(train) / args.batch_size),
                      "mean_train_loss": round(train_loss, 4),
                      "exact_match": round(metrics["exact_match"], 2),
                      "f1": round(metrics["f1"], 2),
                      "wall_s": round(time.perf_counter() - start)}))


if __name__ == "__main__":
    define_flags()
    flags.mark_flag_as_required("framework")
    app.run(main)
