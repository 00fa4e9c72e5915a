"""The sentence-embedding evaluators against SciPy, scikit-learn and
sentence-transformers' own metric code, on the same scores and rankings."""

import numpy as np
import pytest
from scipy import stats
from sentence_transformers.sentence_transformer.evaluation import (
    BinaryClassificationEvaluator, InformationRetrievalEvaluator)
from sklearn.metrics import average_precision_score

from tfbert.metrics.embedding_similarity import STSEvaluator, sts_metrics
from tfbert.metrics.pair_classification import (
    PairClassificationEvaluator, pair_classification_metrics)
from tfbert.metrics.retrieval import RetrievalEvaluator, retrieval_metrics


class LookupModel:
    """`encode` by table lookup: the evaluators' wiring without an
    encoder."""

    def __init__(self, table):
        self.table = table

    def encode(self, texts, batch_size=32):
        return np.stack([self.table[t] for t in texts])


def _vectors(count, seed, dim=8):
    return np.random.default_rng(seed).normal(size=(count, dim))


def test_sts_against_scipy():
    a, b = _vectors(50, 0), _vectors(50, 1)
    gold = np.random.default_rng(2).integers(0, 6, 50).astype(float)
    cosines = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(
        b, axis=1)
    metrics = sts_metrics(a, b, gold)
    assert metrics["pearson_cosine"] == pytest.approx(
        stats.pearsonr(gold, cosines)[0], abs=1e-9)
    assert metrics["spearman_cosine"] == pytest.approx(
        stats.spearmanr(gold, cosines)[0], abs=1e-9)
    texts_a = [f"a{i}" for i in range(50)]
    texts_b = [f"b{i}" for i in range(50)]
    model = LookupModel({**dict(zip(texts_a, a)), **dict(zip(texts_b, b))})
    assert STSEvaluator(texts_a, texts_b, gold)(model) == metrics


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_classification_against_sentence_transformers(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 80)
    # Rounded scores: tied scores must fall on the same side.
    scores = np.round(labels * 0.3 + rng.normal(scale=0.4, size=80), 1)
    ours = pair_classification_metrics(scores, labels)
    accuracy, threshold = BinaryClassificationEvaluator \
        .find_best_acc_and_threshold(scores, labels, True)
    f1, precision, recall, f1_threshold = BinaryClassificationEvaluator \
        .find_best_f1_and_threshold(scores, labels, True)
    assert ours["accuracy"] == pytest.approx(accuracy)
    assert ours["accuracy_threshold"] == pytest.approx(threshold)
    assert (ours["f1"], ours["precision"], ours["recall"]) == pytest.approx(
        (f1, precision, recall))
    assert ours["f1_threshold"] == pytest.approx(f1_threshold)
    assert ours["average_precision"] == pytest.approx(
        average_precision_score(labels, scores))


def test_pair_classification_evaluator_prefixes_cosine():
    a, b = _vectors(20, 3), _vectors(20, 4)
    labels = np.arange(20) % 2
    model = LookupModel({**{f"a{i}": v for i, v in enumerate(a)},
                         **{f"b{i}": v for i, v in enumerate(b)}})
    metrics = PairClassificationEvaluator(
        [f"a{i}" for i in range(20)], [f"b{i}" for i in range(20)],
        labels)(model)
    cosines = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(
        b, axis=1)
    assert metrics["cosine_average_precision"] == pytest.approx(
        average_precision_score(labels, cosines))
    assert set(metrics) == {f"cosine_{k}" for k in (
        "accuracy", "accuracy_threshold", "f1", "f1_threshold", "precision",
        "recall", "average_precision")}


def test_retrieval_against_sentence_transformers():
    rng = np.random.default_rng(5)
    corpus_size, query_count = 150, 30
    rankings = [list(rng.permutation(corpus_size)) for _ in range(
        query_count)]
    relevant = [set(rng.choice(corpus_size, rng.integers(1, 4),
                               replace=False).tolist())
                for _ in range(query_count)]
    # Plant hits near the top so the metrics are not all ~0.
    for ranking, wanted in zip(rankings, relevant):
        first = next(iter(wanted))
        ranking.remove(first)
        ranking.insert(int(rng.integers(0, 12)), first)
    ours = retrieval_metrics(rankings, relevant)
    reference = InformationRetrievalEvaluator(
        queries={str(q): "" for q in range(query_count)},
        corpus={str(c): "" for c in range(corpus_size)},
        relevant_docs={str(q): {str(c) for c in wanted}
                       for q, wanted in enumerate(relevant)},
        accuracy_at_k=[1], precision_recall_at_k=[1, 5, 10], mrr_at_k=[10],
        ndcg_at_k=[10], map_at_k=[100])
    theirs = reference.compute_metrics([
        [{"corpus_id": str(c), "score": float(corpus_size - rank)}
         for rank, c in enumerate(ranking)] for ranking in rankings])
    for k in (1, 5, 10):
        assert ours[f"recall@{k}"] == pytest.approx(theirs["recall@k"][k])
    assert ours["mrr@10"] == pytest.approx(theirs["mrr@k"][10])
    assert ours["ndcg@10"] == pytest.approx(theirs["ndcg@k"][10])
    assert ours["map@100"] == pytest.approx(theirs["map@k"][100])
    assert 0.1 < ours["mrr@10"] < 1.0


def test_retrieval_evaluator_ranks_by_cosine():
    corpus = _vectors(12, 6)
    queries = corpus[[3, 7]] + 0.01 * _vectors(2, 7)
    model = LookupModel({**{f"c{i}": v for i, v in enumerate(corpus)},
                         "q0": queries[0], "q1": queries[1]})
    metrics = RetrievalEvaluator(["q0", "q1"], [f"c{i}" for i in range(12)],
                                 [{3}, {7}])(model)
    assert metrics["recall@1"] == metrics["mrr@10"] == metrics["map@100"] \
        == 1.0
