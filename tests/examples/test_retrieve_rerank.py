"""examples/retrieve_rerank.py on SQuAD test-article questions and
paragraphs, with tiny encoders: the reranked list of each question is a
permutation of its retrieved list, ordered by the cross-encoder's scores."""

import numpy as np
import pytest

from benchmarks.sentence_data import squad_split
from examples.retrieve_rerank import rerank, retrieve
from tfbert.models import SentenceEncoder, TextClassifier


@pytest.mark.slow
def test_rerank_permutes_the_retrieved_list_by_cross_encoder_score(
        shared_data_dir, tiny_checkpoint):
    _, (questions, corpus, _) = squad_split(shared_data_dir, 0.2)
    questions, corpus = questions[:4], corpus[:24]
    bi_encoder = SentenceEncoder.from_pretrained(tiny_checkpoint,
                                                 seq_length=32)
    cross_encoder = TextClassifier.from_pretrained(
        tiny_checkpoint, num_classes=2, is_pair=True, seq_length=48)

    hits = retrieve(bi_encoder, questions, corpus, top_k=5)
    reranked = rerank(cross_encoder, questions, corpus, hits, batch_size=8)
    assert len(reranked) == len(questions)
    orders_changed = 0
    for question, retrieved, row in zip(questions, hits, reranked):
        assert len(retrieved) == 5
        ids = [hit["corpus_id"] for hit in row]
        assert sorted(ids) == sorted(hit["corpus_id"] for hit in retrieved)
        # The cross-encoder's margin of each pair, from the Keras forward.
        logits = cross_encoder({
            "text_a": np.array([question] * len(ids), object),
            "text_b": np.array([corpus[i] for i in ids], object)}).numpy()
        margins = logits[:, 1] - logits[:, 0]
        np.testing.assert_allclose([hit["cross_score"] for hit in row],
                                   margins, atol=1e-5)
        assert np.all(np.diff(margins) <= 1e-6)
        orders_changed += ids != [hit["corpus_id"] for hit in retrieved]
    assert orders_changed > 0
