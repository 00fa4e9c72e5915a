"""Retrieve, then rerank: a bi-encoder (`tfbert.SentenceEncoder`) finds each
question's top-k paragraphs among all of them in one matrix product, then a
cross-encoder (a GLUE-style pair classifier, `tfbert.TextClassifier` with
`is_pair=True`) reads each (question, paragraph) pair of those k together and
re-scores it. The bi-encoder makes the search cheap (one embedding per
paragraph, computed once); the cross-encoder, which sees both texts in one
attention pass, orders the few candidates better than a cosine can.

    python -m examples.retrieve_rerank --data_dir=../shared/data \\
      --train_questions=512 --test_questions=200 --top_k=10

On SQuAD v1.1 (`benchmarks.sentence_data.squad_split`: articles split into
train and test): the cross-encoder is fine-tuned on train-article pairs,
each question with its own paragraph (label 1) and with the bi-encoder's
best-ranked wrong paragraph (label 0, a hard negative); then each test
question retrieves `--top_k` paragraphs of the test articles and the
cross-encoder reranks them. Prints recall@1 before and after reranking.
"""

import numpy as np
from absl import app, flags

from tfbert import search

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", "../shared/data", "The shared data.")
flags.DEFINE_string("bi_encoder", "minilm-l6-h384-uncased",
                    "Checkpoint of the bi-encoder.")
flags.DEFINE_string("cross_encoder", "minilm-l6-h384-uncased",
                    "Checkpoint the cross-encoder is fine-tuned from.")
flags.DEFINE_integer("train_questions", 512,
                     "Train-article questions the cross-encoder learns on.")
flags.DEFINE_integer("test_questions", 200, "Test questions to rerank for.")
flags.DEFINE_integer("top_k", 10, "Paragraphs retrieved per question.")
flags.DEFINE_integer("seq_length", 256, "Tokens per (question, paragraph).")
flags.DEFINE_integer("epochs", 1, "Cross-encoder epochs.")


def retrieve(bi_encoder, questions, paragraphs, top_k):
    """Each question's `top_k` paragraphs by cosine: one list per question
    of `{"corpus_id": int, "score": float}` (`tfbert.search.semantic_search`),
    best first."""
    return search.semantic_search(bi_encoder.encode(questions),
                                  bi_encoder.encode(paragraphs), top_k=top_k)


def relevance(cross_encoder, questions, paragraphs, batch_size=32):
    """The cross-encoder's score of each (question, paragraph) pair: float32
    [n], the logit margin of class 1 (relevant) over class 0, or the score
    itself for a one-output (regression) cross-encoder."""
    logits = cross_encoder.predict((list(questions), list(paragraphs)),
                                   batch_size=batch_size, verbose=0)
    logits = np.asarray(logits, np.float32)
    return logits[:, 0] if logits.shape[1] == 1 else logits[:, 1] - logits[:, 0]


def rerank(cross_encoder, questions, paragraphs, hits, batch_size=32):
    """`hits` (as `retrieve` returns them) re-ordered by the cross-encoder:
    per question the same corpus ids, each with `cross_score`, by
    decreasing `cross_score` (ties keep the retrieval order)."""
    pair_questions = [questions[q] for q, row in enumerate(hits) for _ in row]
    pair_paragraphs = [paragraphs[hit["corpus_id"]]
                       for row in hits for hit in row]
    scores = iter(relevance(cross_encoder, pair_questions, pair_paragraphs,
                            batch_size).tolist())
    reranked = []
    for row in hits:
        scored = [dict(hit, cross_score=next(scores)) for hit in row]
        reranked.append(sorted(scored, key=lambda hit: -hit["cross_score"]))
    return reranked


def recall_at_1(hits, relevant):
    return float(np.mean([bool(row) and row[0]["corpus_id"] in gold
                          for row, gold in zip(hits, relevant)]))


def train_cross_encoder(bi_encoder, questions, paragraphs):
    """A pair classifier fine-tuned on (question, own paragraph) = 1 and
    (question, the bi-encoder's best wrong paragraph) = 0."""
    import tfbert

    corpus = list(dict.fromkeys(paragraphs))
    hits = retrieve(bi_encoder, questions, corpus, top_k=2)
    negatives = [next(corpus[hit["corpus_id"]] for hit in row
                      if corpus[hit["corpus_id"]] != paragraph)
                 for row, paragraph in zip(hits, paragraphs)]
    model = tfbert.TextClassifier.from_pretrained(
        FLAGS.cross_encoder, num_classes=2, is_pair=True,
        seq_length=FLAGS.seq_length)
    model.compile()
    model.fit((questions + questions, paragraphs + negatives),
              [1] * len(questions) + [0] * len(questions), batch_size=16,
              epochs=FLAGS.epochs, verbose=0)
    return model


def main(argv):
    del argv
    import tfbert
    from benchmarks.sentence_data import squad_split

    (train_q, train_p), (test_q, corpus, relevant) = squad_split(
        FLAGS.data_dir, test_fraction=0.2)
    bi_encoder = tfbert.SentenceEncoder.from_pretrained(FLAGS.bi_encoder)
    cross_encoder = train_cross_encoder(
        bi_encoder, train_q[:FLAGS.train_questions],
        train_p[:FLAGS.train_questions])
    test_q = test_q[:FLAGS.test_questions]
    relevant = relevant[:FLAGS.test_questions]
    hits = retrieve(bi_encoder, test_q, corpus, FLAGS.top_k)
    reranked = rerank(cross_encoder, test_q, corpus, hits)
    print(f"{len(test_q)} questions, {len(corpus)} paragraphs, top "
          f"{FLAGS.top_k}: recall@1 retrieved {recall_at_1(hits, relevant):.4f}"
          f", reranked {recall_at_1(reranked, relevant):.4f}")


if __name__ == "__main__":
    app.run(main)
