"""Your own files: `tfbert-classify` beside HF's `run_glue.py` recipe
(`transformers.Trainer` on the same CSV/JSONL files), same checkpoint,
budget, seed and hyperparameters.

    python -m benchmarks.own_data --num_train=400 --num_eval=300 \
      --num_train_epochs=2

Four data sets are written under `--workdir` from ../shared/data, each in
another layout than its source:

- reviews: SST-2 as CSV, columns `review`, `verdict` (negative/positive);
- paraphrase: MRPC as CSV, columns `first`, `second`, `same` (no/yes);
- entity_types (multi-label): CoNLL-2003 sentences as JSONL, `sentence` and
  `types`, the list of entity types (LOC, MISC, ORG, PER) the sentence
  holds, possibly empty; train from train.txt, eval from valid.txt;
- long_reviews (long documents): CSV `document`, `verdict`: Wikipedia
  sentences (longer than one window of `--max_seq_length` pieces) followed
  by three SST-2 reviews of one sentiment, the label. Only text past the
  first window tells it; tfbert reads every window (`--doc_stride`), HF's
  recipe truncates.

The HF side is `run_glue.py`'s recipe without the `datasets` package (not
installed here): the files read with `csv`/`json`, labels sorted,
`AutoModelForSequenceClassification` (`problem_type=
multi_label_classification` for a list label, decided at sigmoid >= 0.5),
tokenization truncated to `--max_seq_length`, `DataCollatorWithPadding`,
`Trainer` (AdamW, bias/LayerNorm not decayed, linear warmup over 10% then
decay, clipping 1.0). tfbert: `python -m tasks.classify` with the same
batch size, learning rate, epochs, warmup, weight decay and seed. Metrics
on the eval file: tfbert's eval_results.json; HF's computed with
scikit-learn. Each run is a subprocess; one JSON line per run is printed
and appended to `--output`.
"""

import csv
import json
import os
import shutil
import sys
import time

from absl import app, flags

from benchmarks.glue_accuracy import _checkpoint, _run

FLAGS = flags.FLAGS

SETS = ("reviews", "paraphrase", "entity_types", "long_reviews")
# Per set: file extension, text columns, label column, multi-label.
LAYOUTS = {
    "reviews": ("csv", ("review",), "verdict", False),
    "paraphrase": ("csv", ("first", "second"), "same", False),
    "entity_types": ("jsonl", ("sentence",), "types", True),
    "long_reviews": ("csv", ("document",), "verdict", False),
}
WARMUP_PROPORTION = 0.1
WEIGHT_DECAY = 0.01


def define_flags():
    flags.DEFINE_list("sets", list(SETS), "Data sets, in run order.")
    flags.DEFINE_list("frameworks", ["tfbert", "hf"], "tfbert and/or hf.")
    flags.DEFINE_string("data_dir", os.path.join(
        os.path.dirname(__file__), "..", "..", "shared", "data"),
        "Directory holding glue/, conll2003/ and wikipedia/.")
    flags.DEFINE_string("workdir", "/tmp/tfbert_own_data",
                        "Data files, model dirs and logs.")
    flags.DEFINE_string("output", "/tmp/tfbert_own_data/results.jsonl",
                        "Results file (JSON lines, appended).")
    flags.DEFINE_integer("num_train", 800, "Training rows of each set.")
    flags.DEFINE_integer("num_eval", 500, "Eval rows of each set.")
    flags.DEFINE_float("num_train_epochs", 2.0, "Epochs.")
    flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.")
    flags.DEFINE_integer("train_batch_size", 32, "Rows per batch.")
    flags.DEFINE_integer("max_seq_length", 128, "Longest packed input.")
    flags.DEFINE_integer("doc_stride", 64,
                         "tfbert's window stride on long_reviews.")
    flags.DEFINE_integer("seed", 42, "Seed of both frameworks.")
    flags.DEFINE_string("worker", None, "Internal: run HF on this set.")


# ---------------------------------------------------------------- data

def _tsv_rows(path):
    with open(path, encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t",
                                   quoting=csv.QUOTE_NONE))


def _write_csv(path, columns, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows(rows)


def _write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)


def _verdict(label):
    return ("negative", "positive")[int(label)]


def _reviews(glue, split):
    return [(r["sentence"].strip(), _verdict(r["label"]))
            for r in _tsv_rows(os.path.join(glue, "SST-2", f"{split}.tsv"))]


def _half(items, which):
    middle = len(items) // 2
    return items[middle:] if which else items[:middle]


def _long_reviews(reviews, filler, min_filler_words, rng):
    """`(document, verdict)` rows, shuffled: Wikipedia sentences of at least
    `min_filler_words` words, then three reviews of one sentiment."""
    by_label = {}
    for text, verdict in reviews:
        by_label.setdefault(verdict, []).append(text)
    groups = []
    for verdict, texts in sorted(by_label.items()):
        groups += [(texts[i:i + 3], verdict)
                   for i in range(0, len(texts) - 2, 3)]
    rng.shuffle(groups)
    rows, position = [], 0
    for chosen, verdict in groups:
        words = []
        while len(words) < min_filler_words:
            words += filler[position % len(filler)].split()
            position += 1
        rows.append((" ".join(words + chosen), verdict))
    return rows


def write_sets(data_dir, out_dir, num_train, num_eval, max_seq_length, seed):
    """Writes every set's train and eval file under `out_dir`; returns
    {set: (train path, eval path)}."""
    import random

    from tfbert.data.conll import read_conll
    from tfbert.data.wikipedia import convert_wikiextractor

    glue = os.path.join(data_dir, "glue")
    os.makedirs(out_dir, exist_ok=True)
    paths = {name: tuple(os.path.join(out_dir, f"{name}_{split}."
                                      f"{LAYOUTS[name][0]}")
                         for split in ("train", "eval")) for name in SETS}
    for split, path, count in (("train", 0, num_train), ("dev", 1, num_eval)):
        _write_csv(paths["reviews"][path], ["review", "verdict"],
                   _reviews(glue, split)[:count])
        mrpc = _tsv_rows(os.path.join(glue, "MRPC", f"{split}.tsv"))[:count]
        _write_csv(paths["paraphrase"][path], ["first", "second", "same"],
                   [(r["#1 String"], r["#2 String"],
                     ("no", "yes")[int(r["Quality"])]) for r in mrpc])
        conll = read_conll(os.path.join(
            data_dir, "conll2003",
            ("train" if split == "train" else "valid") + ".txt"))[:count]
        _write_jsonl(paths["entity_types"][path], [
            {"sentence": " ".join(s.words),
             "types": sorted({t[2:] for t in s.tags if t != "O"})}
            for s in conll])
    corpus = os.path.join(out_dir, "wikipedia.txt")
    convert_wikiextractor(os.path.join(
        data_dir, "wikipedia", "enwiki-wikiextractor", "AA", "wiki_0*"),
        corpus)
    with open(corpus, encoding="utf-8") as f:
        filler = [line.strip() for line in f if len(line.split()) > 5]
    rng = random.Random(seed)
    # Whole words are at least one piece each: this many words fill more
    # than the first window. Train and eval take their reviews and their
    # Wikipedia text from different halves.
    reviews = _reviews(glue, "train")
    for path, half, count in ((paths["long_reviews"][0], 0, num_train),
                              (paths["long_reviews"][1], 1, num_eval)):
        _write_csv(path, ["document", "verdict"], _long_reviews(
            _half(reviews, half), _half(filler, half), max_seq_length,
            rng)[:count])
    return paths


def _read_rows(path):
    if path.endswith(".jsonl"):
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f]
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- HF

def _hf_worker(name, train_path, eval_path):
    import numpy as np
    import torch
    import transformers
    from sklearn import metrics as sk

    _, text_columns, label_column, multi = LAYOUTS[name]
    train_rows, eval_rows = _read_rows(train_path), _read_rows(eval_path)
    if multi:
        label_list = sorted({t for r in train_rows for t in r[label_column]})
    else:
        label_list = sorted({r[label_column] for r in train_rows})
    checkpoint = _checkpoint()
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)

    def encode(rows):
        encoded = tokenizer(*([r[c] for r in rows] for c in text_columns),
                            truncation=True, max_length=FLAGS.max_seq_length)
        items = []
        for i, row in enumerate(rows):
            if multi:
                label = [float(t in row[label_column]) for t in label_list]
            else:
                label = label_list.index(row[label_column])
            items.append({**{k: encoded[k][i] for k in encoded},
                          "labels": label})
        return items

    train_set, eval_set = encode(train_rows), encode(eval_rows)
    truncated = sum(len(tokenizer(*(r[c] for c in text_columns))[
        "input_ids"]) > FLAGS.max_seq_length for r in eval_rows)
    transformers.set_seed(FLAGS.seed)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        checkpoint, num_labels=len(label_list),
        problem_type=("multi_label_classification" if multi
                      else "single_label_classification"))
    arguments = transformers.TrainingArguments(
        output_dir=os.path.join(FLAGS.workdir, f"hf_trainer_{name}"),
        per_device_train_batch_size=FLAGS.train_batch_size,
        per_device_eval_batch_size=64, learning_rate=FLAGS.learning_rate,
        num_train_epochs=FLAGS.num_train_epochs,
        warmup_steps=WARMUP_PROPORTION, weight_decay=WEIGHT_DECAY,
        adam_epsilon=1e-6, max_grad_norm=1.0, seed=FLAGS.seed,
        save_strategy="no", logging_strategy="epoch", report_to="none",
        use_cpu=True, disable_tqdm=True)
    trainer = transformers.Trainer(
        model=model, args=arguments, train_dataset=train_set,
        data_collator=transformers.DataCollatorWithPadding(tokenizer))
    trainer.train()
    logits = trainer.predict(eval_set).predictions
    labels = np.array([item["labels"] for item in eval_set])
    if multi:
        predicted = 1 / (1 + np.exp(-logits)) >= 0.5
        truth = labels > 0.5
        result = {"micro_f1": sk.f1_score(truth, predicted, average="micro",
                                          zero_division=0),
                  "macro_f1": sk.f1_score(truth, predicted, average="macro",
                                          zero_division=0),
                  "subset_accuracy": sk.accuracy_score(truth, predicted)}
    else:
        predicted = logits.argmax(-1)
        result = {"accuracy": sk.accuracy_score(labels, predicted),
                  "macro_f1": sk.f1_score(labels, predicted,
                                          average="macro")}
        if len(label_list) == 2:
            result["f1"] = sk.f1_score(labels, predicted)
    print(json.dumps({"eval": {k: float(v) for k, v in result.items()},
                      "eval_rows_truncated": truncated,
                      "torch_threads": torch.get_num_threads()}))


def _run_hf(name, paths, model_dir, log_path):
    del model_dir  # the reference writes no files
    seconds = _run([
        sys.executable, "-m", "benchmarks.own_data", f"--worker={name}",
        f"--workdir={FLAGS.workdir}", f"--num_train={FLAGS.num_train}",
        f"--num_train_epochs={FLAGS.num_train_epochs}",
        f"--learning_rate={FLAGS.learning_rate}",
        f"--train_batch_size={FLAGS.train_batch_size}",
        f"--max_seq_length={FLAGS.max_seq_length}",
        f"--seed={FLAGS.seed}"], log_path)
    with open(log_path) as f:
        last = [line for line in f if line.startswith('{"eval"')][-1]
    return {**json.loads(last), "wall_seconds": round(seconds, 1)}


# ---------------------------------------------------------------- tfbert

def _run_tfbert(name, paths, model_dir, log_path):
    _, text_columns, label_column, multi = LAYOUTS[name]
    command = [
        sys.executable, "-m", "tasks.classify",
        f"--train_file={paths[0]}", f"--eval_file={paths[1]}",
        f"--text_a_column={text_columns[0]}",
        f"--label_column={label_column}",
        f"--init_checkpoint={_checkpoint()}", f"--model_dir={model_dir}",
        "--do_train", "--do_eval", f"--max_seq_length={FLAGS.max_seq_length}",
        f"--train_batch_size={FLAGS.train_batch_size}",
        "--eval_batch_size=64", f"--learning_rate={FLAGS.learning_rate}",
        f"--num_train_epochs={FLAGS.num_train_epochs}",
        f"--warmup_proportion={WARMUP_PROPORTION}",
        f"--weight_decay={WEIGHT_DECAY}", f"--seed={FLAGS.seed}",
        "--mixed_precision=none", "--distribution_strategy=one_device"]
    if len(text_columns) > 1:
        command.append(f"--text_b_column={text_columns[1]}")
    if multi:
        command.append("--multi_label")
    if name == "long_reviews":
        command.append(f"--doc_stride={FLAGS.doc_stride}")
    seconds = _run(command, log_path)
    with open(os.path.join(model_dir, "eval_results.json")) as f:
        results = json.load(f)["eval"]
    if multi:
        kept = {k: results[k] for k in ("micro_f1", "macro_f1",
                                        "subset_accuracy")}
        kept["tuned"] = {k: results["tuned"][k] for k in (
            "micro_f1", "macro_f1", "subset_accuracy")}
    else:
        kept = {k: results[k] for k in ("accuracy", "macro_f1")}
        classes = list(results["per_class"])
        if len(classes) == 2:
            kept["f1"] = results["per_class"][classes[1]]["f1"]
    return {"eval": kept, "wall_seconds": round(seconds, 1)}


def main(argv):
    del argv
    paths_dir = os.path.join(FLAGS.workdir, "data")
    if FLAGS.worker:
        name = FLAGS.worker
        extension = LAYOUTS[name][0]
        _hf_worker(name, *(os.path.join(paths_dir, f"{name}_{s}.{extension}")
                           for s in ("train", "eval")))
        return
    for name in FLAGS.sets:
        if name not in SETS:
            raise app.UsageError(f"--sets: unknown set {name!r}; known: "
                                 f"{', '.join(SETS)}")
    paths = write_sets(FLAGS.data_dir, paths_dir, FLAGS.num_train,
                       FLAGS.num_eval, FLAGS.max_seq_length, FLAGS.seed)
    print(f"cpus={os.cpu_count()} load={os.getloadavg()} "
          f"num_train={FLAGS.num_train} num_eval={FLAGS.num_eval} "
          f"epochs={FLAGS.num_train_epochs} lr={FLAGS.learning_rate}",
          flush=True)
    for name in FLAGS.sets:
        for framework in FLAGS.frameworks:
            model_dir = os.path.join(FLAGS.workdir, f"{framework}_{name}")
            if os.path.exists(model_dir):
                shutil.rmtree(model_dir)
            run = _run_tfbert if framework == "tfbert" else _run_hf
            load = os.getloadavg()[0]
            result = run(name, paths[name], model_dir, model_dir + ".log")
            result.update(set=name, framework=framework,
                          num_train=FLAGS.num_train, num_eval=FLAGS.num_eval,
                          num_train_epochs=FLAGS.num_train_epochs,
                          learning_rate=FLAGS.learning_rate,
                          max_seq_length=FLAGS.max_seq_length,
                          seed=FLAGS.seed, load_at_start=round(load, 1),
                          time=time.strftime("%Y-%m-%d %H:%M UTC",
                                             time.gmtime()))
            with open(FLAGS.output, "a") as f:
                f.write(json.dumps(result) + "\n")
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    define_flags()
    app.run(main)
