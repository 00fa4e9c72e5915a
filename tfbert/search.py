"""Search over sentence embeddings by cosine similarity, in bounded memory.

  * `semantic_search`: each query's top-k corpus entries.
  * `paraphrase_mining` / `paraphrase_mining_embeddings`: the most similar
    pairs within one collection.
  * `community_detection`: groups of embeddings close to a central one.

The results have sentence-transformers' `util` formats and, on the same
embeddings, the same ids. Scores are computed chunk by chunk: a
[query_chunk_size, corpus_chunk_size] float32 block at a time, whatever the
sizes of the collections.

Ties (equal scores): among equal scores the lower corpus id ranks first, and
is the one kept at the top-k boundary. sentence-transformers keeps
whichever `torch.topk` returns at the boundary and orders equal scores by
decreasing id, so the two agree on ids only where scores differ (any
real-valued embeddings without exact duplicates).
"""

import numpy as np
import tensorflow as tf


def _normalized(embeddings, name):
    embeddings = np.asarray(embeddings, np.float32)
    if embeddings.ndim == 1:
        embeddings = embeddings[None]
    if embeddings.ndim != 2:
        raise ValueError(f"{name} must be [n, D], got shape "
                         f"{embeddings.shape}")
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    return embeddings / np.maximum(norms, 1e-12)


def _check_positive(**values):
    for name, value in values.items():
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def _top_k(queries, corpus, k, corpus_chunk_size):
    """The `k` highest scores of each query over the whole corpus and their
    corpus ids (float32 [q, k'], int64 [q, k'], k' = min(k, corpus size)),
    the corpus scanned in chunks; ties: lower id first."""
    values = ids = None
    for start in range(0, len(corpus), corpus_chunk_size):
        chunk = corpus[start:start + corpus_chunk_size]
        scores = tf.matmul(queries, chunk, transpose_b=True)
        chunk_values, chunk_ids = tf.math.top_k(
            scores, k=min(k, len(chunk)))
        chunk_ids = tf.cast(chunk_ids, tf.int64) + start
        if values is not None:
            # The earlier chunks' ids are lower: on ties top_k keeps them.
            chunk_values = tf.concat([values, chunk_values], axis=1)
            chunk_ids = tf.concat([ids, chunk_ids], axis=1)
            chunk_values, order = tf.math.top_k(
                chunk_values, k=min(k, chunk_values.shape[1]))
            chunk_ids = tf.gather(chunk_ids, order, batch_dims=1)
        values, ids = chunk_values, chunk_ids
    return values.numpy(), ids.numpy()


def semantic_search(query_embeddings, corpus_embeddings, top_k=10,
                    query_chunk_size=100, corpus_chunk_size=500000):
    """Each query's `top_k` most similar corpus entries by cosine.

    Args:
      query_embeddings: float [q, D] (or [D] for one query).
      corpus_embeddings: float [n, D].
      top_k: results per query (fewer when the corpus is smaller).
      query_chunk_size, corpus_chunk_size: block sizes of the score
        computation (memory: 4 * query_chunk_size * corpus_chunk_size
        bytes).

    Returns:
      One list per query of `{"corpus_id": int, "score": float}`, by
      decreasing score.
    """
    _check_positive(top_k=top_k, query_chunk_size=query_chunk_size,
                    corpus_chunk_size=corpus_chunk_size)
    queries = _normalized(query_embeddings, "query_embeddings")
    corpus = _normalized(corpus_embeddings, "corpus_embeddings")
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"queries have dimension {queries.shape[1]}, the "
                         f"corpus {corpus.shape[1]}")
    results = []
    if len(corpus) == 0:
        return [[] for _ in queries]
    for start in range(0, len(queries), query_chunk_size):
        values, ids = _top_k(queries[start:start + query_chunk_size],
                             corpus, top_k, corpus_chunk_size)
        results += [[{"corpus_id": int(i), "score": float(s)}
                     for s, i in zip(row_values, row_ids)]
                    for row_values, row_ids in zip(values, ids)]
    return results


def paraphrase_mining_embeddings(embeddings, top_k=100, max_pairs=500000,
                                 query_chunk_size=5000,
                                 corpus_chunk_size=100000):
    """The most similar pairs of one collection, by cosine.

    Each embedding's `top_k` nearest others are candidates; of the distinct
    pairs among them, the `max_pairs` highest-scoring are returned.

    Args:
      embeddings: float [n, D].
      top_k: candidates per embedding.
      max_pairs: pairs returned at most.
      query_chunk_size, corpus_chunk_size: block sizes (as in
        `semantic_search`).

    Returns:
      list of `[score, i, j]` (float, int, int; i < j) by decreasing score.
    """
    _check_positive(top_k=top_k, max_pairs=max_pairs,
                    query_chunk_size=query_chunk_size,
                    corpus_chunk_size=corpus_chunk_size)
    embeddings = _normalized(embeddings, "embeddings")
    count = len(embeddings)
    firsts, seconds, scores = [], [], []
    for start in range(0, count, query_chunk_size):
        # One more than top_k: the embedding itself is usually among them.
        values, ids = _top_k(embeddings[start:start + query_chunk_size],
                             embeddings, top_k + 1, corpus_chunk_size)
        rows = np.arange(start, start + len(ids))[:, None]
        others = ids != rows
        # The first top_k neighbours that are not the query itself.
        keep = others & (np.cumsum(others, axis=1) <= top_k)
        rows = np.broadcast_to(rows, ids.shape)[keep]
        firsts.append(np.minimum(rows, ids[keep]))
        seconds.append(np.maximum(rows, ids[keep]))
        scores.append(values[keep])
    if not scores:
        return []
    firsts, seconds = np.concatenate(firsts), np.concatenate(seconds)
    scores = np.concatenate(scores)
    # A pair found from both ends: keep the score seen first (row order).
    _, first_seen = np.unique(firsts * count + seconds, return_index=True)
    firsts, seconds = firsts[first_seen], seconds[first_seen]
    scores = scores[first_seen]
    order = np.lexsort((seconds, firsts, -scores))[:max_pairs]
    return [[float(scores[k]), int(firsts[k]), int(seconds[k])]
            for k in order]


def paraphrase_mining(model, sentences, batch_size=32,
                      show_progress_bar=None, **kwargs):
    """`paraphrase_mining_embeddings` of `model.encode(sentences)`.

    Args:
      model: a `tfbert.SentenceEncoder` (anything with `encode`).
      sentences: list of str.
      batch_size, show_progress_bar: of `encode`.
      **kwargs: `top_k`, `max_pairs`, chunk sizes.

    Returns:
      list of `[score, i, j]` (indices into `sentences`), best first.
    """
    embeddings = model.encode(list(sentences), batch_size=batch_size,
                              show_progress_bar=show_progress_bar)
    return paraphrase_mining_embeddings(embeddings, **kwargs)


def community_detection(embeddings, threshold=0.75, min_community_size=10,
                        batch_size=1024):
    """Communities: sets of embeddings whose cosine to a central embedding
    is at least `threshold`, at least `min_community_size` large, disjoint.

    Every embedding with enough close neighbours (itself included) proposes
    the community of its neighbours; the largest are kept first, and a later
    one keeps only the members no earlier community took (and is dropped if
    that leaves it too small, or its centre was taken).

    Args:
      embeddings: float [n, D].
      threshold: the cosine at or above which two embeddings are close.
      min_community_size: smallest community returned.
      batch_size: rows of the [batch_size, n] score block at a time.

    Returns:
      list of communities, largest first; each a list of int ids, the
      centre first, then its members by decreasing cosine to it.
    """
    _check_positive(min_community_size=min_community_size,
                    batch_size=batch_size)
    embeddings = _normalized(embeddings, "embeddings")
    count = len(embeddings)
    if count < min_community_size:
        return []
    proposals = []
    for start in range(0, count, batch_size):
        scores = tf.matmul(embeddings[start:start + batch_size], embeddings,
                           transpose_b=True).numpy()
        close = scores >= threshold
        for row in np.flatnonzero(close.sum(axis=1) >= min_community_size):
            members = np.flatnonzero(close[row])
            members = members[np.argsort(-scores[row, members],
                                         kind="stable")]
            proposals.append((start + int(row), members))
    proposals.sort(key=lambda proposal: len(proposal[1]), reverse=True)
    taken = np.zeros(count, bool)
    communities = []
    for centre, members in proposals:
        if taken[centre]:
            continue
        members = members[~taken[members]]
        if len(members) >= min_community_size:
            community = [centre] + members[members != centre].tolist()
            communities.append(community)
            taken[community] = True
    return sorted(communities, key=len, reverse=True)
