"""SQuAD v1.1 fine-tuning: tfbert vs a PyTorch/HF reference, same data.

    nice -n 5 python -m benchmarks.squad --out=runs/squad_bench \
      --max_train_examples=2000 --max_seq_length=256

Splits ../shared/data/squad_v1.1/dev-v1.1.partA.json by article (first 18
train, last 6 eval), then
  1. times feature conversion: tfbert (`convert_examples_to_features`) and
     HF's fast tokenizer with overflowing windows (what run_qa.py does);
  2. fine-tunes with `python -m tasks.squad` (subprocess, wall time);
  3. fine-tunes HF `BertForQuestionAnswering` from the same checkpoint with
     the shared torch loop (`benchmarks.torch_reference`) over the SAME
     features (tfbert's conversion), the same hyperparameters (AdamW, linear
     warmup/decay, no decay on bias/LayerNorm) and the same post-processing
     and metric code;
and prints EM/F1, wall times and throughputs for both.
"""

import importlib
import json
import math
import os
import re
import subprocess
import sys
import time

import numpy as np
from absl import app, flags

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO_ROOT, "..", "shared", "data", "squad_v1.1",
                    "dev-v1.1.partA.json")
FLAGS = flags.FLAGS
# The task code this benchmark drives, as a CLI (`python -m`) and as a
# library: the one place to change when it moves.
SQUAD_TASK = "tfbert_cli.squad"


def squad_task():
    """The SQuAD task module (imported on first use: it imports TensorFlow)."""
    return importlib.import_module(SQUAD_TASK)
# The flags recorded with the results.
SETTINGS = ("checkpoint", "max_seq_length", "doc_stride", "batch_size",
            "learning_rate", "epochs", "max_train_examples", "seed",
            "clip_norm")


def split_by_article(out_dir, num_train=18):
    with open(DATA, encoding="utf-8") as f:
        data = json.load(f)
    paths = {}
    for name, articles in (("train", data["data"][:num_train]),
                           ("eval", data["data"][num_train:])):
        paths[name] = os.path.join(out_dir, f"{name}.json")
        with open(paths[name], "w", encoding="utf-8") as f:
            json.dump({"version": "1.1", "data": articles}, f)
    return paths


def conversion_throughput(args, examples, tokenizer, hf_tokenizer):
    from tfbert.data import squad

    start = time.perf_counter()
    features = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=args.max_seq_length,
        doc_stride=args.doc_stride, max_query_length=64, is_training=True)
    ours = len(features) / (time.perf_counter() - start)
    start = time.perf_counter()
    encoded = hf_tokenizer(
        [e.question for e in examples], [e.context for e in examples],
        truncation="only_second", max_length=args.max_seq_length,
        stride=args.doc_stride, return_overflowing_tokens=True,
        return_offsets_mapping=True, padding="max_length")
    hf = len(encoded["input_ids"]) / (time.perf_counter() - start)
    return features, ours, hf


def run_tfbert(args, paths):
    model_dir = os.path.join(args.out, "tfbert")
    command = [
        sys.executable, "-m", SQUAD_TASK, "--version=1.1",
        f"--train_file={paths['train']}", f"--eval_file={paths['eval']}",
        f"--init_checkpoint={args.checkpoint}", f"--model_dir={model_dir}",
        "--do_train", "--do_eval", "--noexport_best",
        f"--max_seq_length={args.max_seq_length}",
        f"--doc_stride={args.doc_stride}", "--max_query_length=64",
        f"--train_batch_size={args.batch_size}", "--eval_batch_size=64",
        f"--learning_rate={args.learning_rate}",
        f"--num_train_epochs={args.epochs}",
        f"--max_train_examples={args.max_train_examples}",
        f"--seed={args.seed}", "--mixed_precision=none"]
    print(" ".join(command[1:]), flush=True)
    start = time.perf_counter()
    run = subprocess.run(command, cwd=REPO_ROOT, check=True, text=True,
                         stdout=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    wall = time.perf_counter() - start
    print(run.stdout[-3000:])
    # Keras' epoch line: "N/N - 123s 456ms/step - loss: ..."
    step = re.findall(r"(\d+)(m?)s/step", run.stdout)[-1]
    step_s = int(step[0]) / (1000 if step[1] else 1)
    with open(os.path.join(model_dir, "eval_results.json")) as f:
        return json.load(f), wall, args.batch_size / step_s


def torch_inputs(features, rows):
    """HF keyword inputs (int64 tensors) of `features` rows, trimmed to the
    longest of them."""
    import torch

    length = int(features.input_mask[rows].sum(1).max())
    return {name: torch.from_numpy(array[rows, :length]).long()
            for name, array in (("input_ids", features.input_word_ids),
                                ("attention_mask", features.input_mask),
                                ("token_type_ids", features.input_type_ids))}


def torch_span_logits(model, features, batch_size=64):
    """Start and end logits of an HF QA `model` in eval mode, float32
    [N, max_seq_length] each, padding positions at -1e9 as tfbert's head."""
    import torch

    model.eval()
    width = features.input_word_ids.shape[1]
    starts, ends = [], []
    with torch.no_grad():
        for i in range(0, len(features), batch_size):
            inputs = torch_inputs(
                features, np.arange(i, min(i + batch_size, len(features))))
            out = model(**inputs)
            padding = inputs["attention_mask"].numpy() == 0
            for logits, acc in ((out.start_logits, starts),
                                (out.end_logits, ends)):
                logits = np.where(padding, -1e9, logits.numpy())
                acc.append(np.pad(logits,
                                  [[0, 0], [0, width - logits.shape[1]]],
                                  constant_values=-1e9))
    return np.concatenate(starts), np.concatenate(ends)


def span_batches(features, batch_size, steps, seed):
    """`steps` arrays of feature rows: a new seeded permutation per epoch,
    cut into batches (the last of an epoch may be short)."""
    rng = np.random.default_rng(seed)
    batches = []
    while len(batches) < steps:
        order = rng.permutation(len(features))
        batches += [order[i:i + batch_size]
                    for i in range(0, len(features), batch_size)]
    return batches[:steps]


def run_torch(args, train_features, eval_examples, eval_features):
    import torch
    from transformers import BertForQuestionAnswering

    from benchmarks import torch_reference
    from tfbert.data.squad_postprocess import postprocess_predictions
    from tfbert.metrics.squad import squad_v1_metrics
    from tfbert.presets import get_preset

    torch.manual_seed(args.seed)
    path = get_preset(args.checkpoint).directory()
    model = BertForQuestionAnswering.from_pretrained(str(path))
    n = len(train_features)
    steps = math.ceil(args.epochs * math.ceil(n / args.batch_size))

    def loss(model, rows):
        return model(
            **torch_inputs(train_features, rows),
            start_positions=torch.from_numpy(
                train_features.start_positions[rows]).long(),
            end_positions=torch.from_numpy(
                train_features.end_positions[rows]).long()).loss

    start = time.perf_counter()
    torch_reference.train(
        model, span_batches(train_features, args.batch_size, steps, args.seed),
        loss, learning_rate=args.learning_rate, epsilon=1e-8,
        clip_norm=args.clip_norm)
    train_time = time.perf_counter() - start

    starts, ends = torch_span_logits(model, eval_features)
    result = postprocess_predictions(eval_examples, eval_features, starts, ends)
    wall = time.perf_counter() - start
    return squad_v1_metrics(eval_examples, result.predictions), train_time, wall, steps


def define_run_flags():
    """The checkpoint, data and optimizer flags both SQuAD benchmarks take."""
    flags.DEFINE_string("checkpoint", "minilm-l6-h384-uncased",
                        "Preset or checkpoint directory.")
    flags.DEFINE_integer("max_train_examples", 2000,
                         "First N training questions.")
    flags.DEFINE_integer("max_seq_length", 256, "Tokens per feature.")
    flags.DEFINE_integer("doc_stride", 128, "Stride between context windows.")
    flags.DEFINE_integer("batch_size", 16, "Training batch size.")
    flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.")


def define_flags():
    define_run_flags()
    flags.DEFINE_string("out", "runs/squad_bench", "Output directory.")
    flags.DEFINE_float("epochs", 1.0, "Training epochs.")
    flags.DEFINE_integer("seed", 42, "Seed.")
    flags.DEFINE_float("clip_norm", 0.0,
                       "Global gradient-norm clip of the torch loop (tfbert "
                       "always clips at 1.0); 0 = none.")
    flags.DEFINE_enum("skip", None, ["tfbert", "torch"], "A side to skip.")


def main(argv):
    del argv
    args = FLAGS
    os.makedirs(args.out, exist_ok=True)

    from transformers import BertTokenizerFast

    from tfbert.data import squad
    from tfbert.presets import get_preset
    from tfbert.text.bert_tokenizer import BertTokenizer

    paths = split_by_article(args.out)
    tokenizer = BertTokenizer.from_pretrained(args.checkpoint)
    hf_tokenizer = BertTokenizerFast.from_pretrained(
        str(get_preset(args.checkpoint).directory()))
    train_examples = squad.read_squad_examples(paths["train"])
    eval_examples = squad.read_squad_examples(paths["eval"])
    all_features, ours, hf = conversion_throughput(args, train_examples,
                                                   tokenizer, hf_tokenizer)
    print(f"conversion ({len(train_examples)} train questions -> "
          f"{len(all_features)} features): tfbert {ours:.0f} features/s, "
          f"HF fast tokenizer {hf:.0f} features/s", flush=True)
    subset = train_examples[:args.max_train_examples]
    train_features = squad.convert_examples_to_features(
        subset, tokenizer, max_seq_length=args.max_seq_length,
        doc_stride=args.doc_stride, is_training=True)
    eval_features = squad.convert_examples_to_features(
        eval_examples, tokenizer, max_seq_length=args.max_seq_length,
        doc_stride=args.doc_stride)
    print(f"train: {len(subset)} questions -> {len(train_features)} features;"
          f" eval: {len(eval_examples)} questions -> {len(eval_features)} "
          "features", flush=True)
    report = {"settings": {name: FLAGS[name].value for name in SETTINGS}, "conversion_features_per_s":
              {"tfbert": ours, "hf_fast_tokenizer": hf},
              "train_features": len(train_features),
              "eval_questions": len(eval_examples)}
    if args.skip != "tfbert":
        metrics, wall, speed = run_tfbert(args, paths)
        report["tfbert"] = {"metrics": metrics, "wall_s": wall,
                            "train_features_per_s": speed}
        print(f"tfbert: EM {metrics['exact_match']:.2f} F1 {metrics['f1']:.2f}"
              f" wall {wall:.0f}s ({speed:.1f} train features/s)", flush=True)
    if args.skip != "torch":
        metrics, train_time, wall, steps = run_torch(
            args, train_features, eval_examples, eval_features)
        report["torch_reference"] = {
            "metrics": metrics, "wall_s": wall, "train_s": train_time,
            "train_features_per_s": steps * args.batch_size / train_time}
        print(f"torch: EM {metrics['exact_match']:.2f} F1 {metrics['f1']:.2f} "
              f"wall {wall:.0f}s (train {train_time:.0f}s, "
              f"{steps * args.batch_size / train_time:.1f} features/s)",
              flush=True)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    define_flags()
    app.run(main)
