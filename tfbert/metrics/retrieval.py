"""Retrieval with sentence embeddings: queries against a corpus, ranked by
cosine (`tfbert.search.semantic_search`), scored against the relevant
corpus entries of each query."""

import numpy as np

from tfbert.search import semantic_search

RECALL_AT = (1, 5, 10)
MRR_AT = NDCG_AT = 10
MAP_AT = 100


def retrieval_metrics(ranked_ids, relevant):
    """Recall@1/5/10, MRR@10, NDCG@10 (binary relevance) and MAP@100.

    Args:
      ranked_ids: per query, the corpus ids best first (at least 100 where
        the corpus has them).
      relevant: per query, the set of its relevant corpus ids (non-empty).

    Returns:
      dict: `recall@1`, `recall@5`, `recall@10`, `mrr@10`, `ndcg@10`,
      `map@100`, each the mean over queries. Recall@k is the share of a
      query's relevant entries in its top k; MAP@100 divides by
      min(100, relevant count), as sentence-transformers does.
    """
    if len(ranked_ids) != len(relevant):
        raise ValueError(f"{len(ranked_ids)} rankings but {len(relevant)} "
                         "relevance sets")
    per_query = {name: [] for name in (
        *(f"recall@{k}" for k in RECALL_AT), f"mrr@{MRR_AT}",
        f"ndcg@{NDCG_AT}", f"map@{MAP_AT}")}
    for ranking, wanted in zip(ranked_ids, relevant):
        if not wanted:
            raise ValueError("every query needs at least one relevant entry")
        hits = np.array([i in wanted for i in ranking[:MAP_AT]], bool)
        for k in RECALL_AT:
            per_query[f"recall@{k}"].append(hits[:k].sum() / len(wanted))
        first = np.flatnonzero(hits[:MRR_AT])
        per_query[f"mrr@{MRR_AT}"].append(1.0 / (first[0] + 1)
                                          if len(first) else 0.0)
        discounts = 1.0 / np.log2(np.arange(2, NDCG_AT + 2))
        ideal = discounts[:min(len(wanted), NDCG_AT)].sum()
        per_query[f"ndcg@{NDCG_AT}"].append(
            float((hits[:NDCG_AT] * discounts[:len(hits[:NDCG_AT])]).sum())
            / ideal)
        ranks = np.flatnonzero(hits) + 1
        precisions = np.arange(1, len(ranks) + 1) / ranks
        per_query[f"map@{MAP_AT}"].append(
            precisions.sum() / min(MAP_AT, len(wanted)))
    return {name: float(np.mean(values)) for name, values in
            per_query.items()}


class RetrievalEvaluator:
    """Embeds queries and a corpus with a model, retrieves by cosine and
    scores the rankings.

    Args:
      queries: list of str.
      corpus: list of str.
      relevant: per query, the iterable of its relevant corpus indices.

    Call: `evaluator(model, batch_size=32)` -> `retrieval_metrics` dict.
    """

    def __init__(self, queries, corpus, relevant):
        if len(queries) != len(relevant):
            raise ValueError("queries and relevant differ in length")
        self.queries, self.corpus = list(queries), list(corpus)
        self.relevant = [set(ids) for ids in relevant]

    def __call__(self, model, batch_size=32):
        hits = semantic_search(
            model.encode(self.queries, batch_size=batch_size),
            model.encode(self.corpus, batch_size=batch_size), top_k=MAP_AT)
        return retrieval_metrics(
            [[hit["corpus_id"] for hit in row] for row in hits],
            self.relevant)
