"""Packing speed: the preprocessors' `pack` (truncation and special tokens on
already tokenized segments) and their whole call (tokenize and pack, what
the serving exports run in their graphs), each in a `tf.function`, on SST-2
sentences with the MiniLM WordPiece tokenizer.

    python -m benchmarks.packing --compare_checkout=/tmp/before

Each round runs this checkout's timings and then (with
`--compare_checkout`, another tfbert checkout's repository root) the other
checkout's, each in a fresh process; the parent prints milliseconds per
batch and the graph's op count per figure, and with a second checkout the
median over rounds of its time over this checkout's (above 1: this
checkout is faster). Pairs pack sentence i with sentence i + 1.
"""

import json
import os
import statistics
import subprocess
import sys
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", "../shared/data", "The shared data.")
flags.DEFINE_integer("num_sentences", 200, "SST-2 dev sentences.")
flags.DEFINE_list("batch_sizes", ["1", "32"], "Batch sizes.")
flags.DEFINE_integer("seq_length", 128, "Packed length.")
flags.DEFINE_float("min_seconds", 1.0, "Time each figure at least this long.")
flags.DEFINE_integer("rounds", 3, "Rounds (one process per checkout each).")
flags.DEFINE_string("compare_checkout", None,
                    "Another tfbert checkout to time against this one.")
flags.DEFINE_string("worker", None,
                    "Internal: the checkout whose tfbert this process times.")

PACKERS = ("Preprocessor", "BertPreprocessor")


def _sentences():
    path = os.path.join(FLAGS.data_dir, "glue", "SST-2", "dev.tsv")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [row[0] for row in rows[:FLAGS.num_sentences]]


def _seconds_per_pass(fn, batches):
    """Mean seconds of `fn` over every batch, after one untimed pass."""
    for batch in batches:
        fn(*batch)
    passes, start = 0, time.perf_counter()
    while passes == 0 or time.perf_counter() - start < FLAGS.min_seconds:
        for batch in batches:
            fn(*batch)
        passes += 1
    return (time.perf_counter() - start) / passes / len(batches)


def _worker():
    sys.path.insert(0, FLAGS.worker)
    import tensorflow as tf

    from tfbert.text import BertPreprocessor, BertTokenizer, Preprocessor
    from tfbert.text.packing_layout import BERT_LAYOUT

    tokenizer = BertTokenizer.from_pretrained("minilm-l6-h384-uncased")
    packers = {
        "Preprocessor": Preprocessor(tokenizer, BERT_LAYOUT,
                                     seq_length=FLAGS.seq_length),
        "BertPreprocessor": BertPreprocessor(tokenizer,
                                             seq_length=FLAGS.seq_length)}
    sentences = _sentences()
    texts = [tf.constant(sentences), tf.constant(sentences[1:] +
                                                 sentences[:1])]
    ragged = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1)
    string = tf.TensorSpec([None], tf.string)
    results = {}
    for name, packer in packers.items():
        for segments in (1, 2):
            pack = tf.function(lambda *s, p=packer: p.pack(list(s)),
                               input_signature=[ragged] * segments)
            call = tf.function(lambda *s, p=packer: p(tuple(s)),
                               input_signature=[string] * segments)
            key = f"{name} {segments} segment{'s' * (segments - 1)}"
            results[f"{key}: pack ops"] = len(
                pack.get_concrete_function().graph.get_operations())
            for size in map(int, FLAGS.batch_sizes):
                batches = [[t[i:i + size] for t in texts[:segments]]
                           for i in range(0, len(sentences), size)]
                tokens = [[tf.cast(tokenizer.tokenize(t), tf.int32)
                           for t in batch] for batch in batches]
                results[f"{key}: pack ms, batch {size}"] = 1e3 * (
                    _seconds_per_pass(pack, tokens))
                results[f"{key}: call ms, batch {size}"] = 1e3 * (
                    _seconds_per_pass(call, batches))
    print(json.dumps(results))


def _run(checkout, here):
    argv = [sys.executable, "-m", "benchmarks.packing", f"--worker={checkout}",
            f"--data_dir={FLAGS.data_dir}",
            f"--num_sentences={FLAGS.num_sentences}",
            f"--batch_sizes={','.join(FLAGS.batch_sizes)}",
            f"--seq_length={FLAGS.seq_length}",
            f"--min_seconds={FLAGS.min_seconds}"]
    env = dict(os.environ, PYTHONPATH=checkout)
    out = subprocess.run(argv, env=env, cwd=here, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(_):
    if FLAGS.worker:
        return _worker()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    checkouts = [here] + ([os.path.abspath(FLAGS.compare_checkout)]
                          if FLAGS.compare_checkout else [])
    rounds = [[_run(c, here) for c in checkouts] for _ in range(FLAGS.rounds)]
    for key in rounds[0][0]:
        mine = statistics.median(r[0][key] for r in rounds)
        line = f"{key}: {mine:.3f}"
        if len(checkouts) == 2:
            other = statistics.median(r[1][key] for r in rounds)
            ratios = [r[1][key] / r[0][key] for r in rounds]
            line += (f" | other checkout {other:.3f} | other/this median "
                     f"{statistics.median(ratios):.2f} (min {min(ratios):.2f},"
                     f" max {max(ratios):.2f})")
        print(line)


if __name__ == "__main__":
    app.run(main)
