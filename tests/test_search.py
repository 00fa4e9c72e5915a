"""`tfbert.search` against sentence-transformers' `util` on the same
embeddings: the same ids (no tied scores here; ties are documented and
tested on their own), small chunks so the merging across chunks is
exercised."""

import numpy as np
import pytest
import torch
from sentence_transformers import util

from tfbert import search


def _clustered(count, dim=24, clusters=6, noise=0.35, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    labels = rng.integers(0, clusters, count)
    return (centres[labels] + noise * rng.normal(size=(count, dim))).astype(
        np.float32)


@pytest.mark.parametrize("chunks", [(100, 500000), (7, 13)])
def test_semantic_search_matches(chunks):
    corpus, queries = _clustered(300), _clustered(40, seed=1)
    ours = search.semantic_search(queries, corpus, top_k=10,
                                  query_chunk_size=chunks[0],
                                  corpus_chunk_size=chunks[1])
    theirs = util.semantic_search(torch.tensor(queries), torch.tensor(corpus),
                                  top_k=10)
    assert len(ours) == 40
    for a, b in zip(ours, theirs):
        assert [h["corpus_id"] for h in a] == [h["corpus_id"] for h in b]
        np.testing.assert_allclose([h["score"] for h in a],
                                   [h["score"] for h in b], atol=1e-5)


def test_semantic_search_small_corpus_and_one_query():
    corpus = _clustered(5)
    hits = search.semantic_search(corpus[0], corpus, top_k=10)
    assert len(hits) == 1 and len(hits[0]) == 5
    assert hits[0][0]["corpus_id"] == 0
    assert hits[0][0]["score"] == pytest.approx(1.0, abs=1e-6)


def test_ties_rank_the_lower_id_first():
    corpus = np.array([[1, 0], [0, 1], [1, 0], [1, 0]], np.float32)
    hits = search.semantic_search(corpus[:1], corpus, top_k=2,
                                  corpus_chunk_size=1)
    assert [h["corpus_id"] for h in hits[0]] == [0, 2]


@pytest.mark.parametrize("chunks", [(5000, 100000), (9, 31)])
def test_paraphrase_mining_matches(chunks):
    embeddings = _clustered(200, seed=2)
    ours = search.paraphrase_mining_embeddings(
        embeddings, top_k=5, max_pairs=300, query_chunk_size=chunks[0],
        corpus_chunk_size=chunks[1])
    theirs = util.paraphrase_mining_embeddings(
        torch.tensor(embeddings), top_k=5, max_pairs=300)
    assert len(ours) == len(theirs) == 300
    assert [(i, j) for _, i, j in ours] == [(i, j) for _, i, j in theirs]
    np.testing.assert_allclose([s for s, _, _ in ours],
                               [s for s, _, _ in theirs], atol=1e-5)


def test_paraphrase_mining_encodes_with_the_model():
    class Model:
        def encode(self, sentences, batch_size, show_progress_bar):
            return _clustered(len(sentences), seed=3)

    pairs = search.paraphrase_mining(Model(), ["a"] * 30, top_k=3)
    assert pairs == search.paraphrase_mining_embeddings(
        _clustered(30, seed=3), top_k=3)


@pytest.mark.parametrize("threshold,min_size,batch", [
    (0.75, 10, 1024), (0.6, 5, 17), (0.9, 3, 64)])
def test_community_detection_matches(threshold, min_size, batch):
    embeddings = _clustered(250, seed=4)
    ours = search.community_detection(embeddings, threshold=threshold,
                                      min_community_size=min_size,
                                      batch_size=batch)
    theirs = util.community_detection(torch.tensor(embeddings),
                                      threshold=threshold,
                                      min_community_size=min_size,
                                      batch_size=batch)
    assert ours, "the clusters should form communities"
    assert ours == theirs


def test_bad_arguments():
    with pytest.raises(ValueError, match="top_k must be an int >= 1"):
        search.semantic_search(np.ones((1, 2)), np.ones((3, 2)), top_k=0)
    with pytest.raises(ValueError, match="queries have dimension 3"):
        search.semantic_search(np.ones((1, 3)), np.ones((3, 2)))
