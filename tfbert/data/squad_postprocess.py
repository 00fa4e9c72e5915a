"""From start/end logits of SQuAD features to answer texts.

A candidate span `(i, j)` of a feature is valid when both tokens lie in the
context, `i` is in its max-context window, `i <= j` and it is at most
`max_answer_length` tokens long; its score is `start_logits[i] +
end_logits[j]`. All valid spans are scored (not only pairs of the top-k
starts and ends, as the original BERT does, which can miss the best valid
span when the top starts fall in the question), so the best span is the
exact argmax, which is also what the exported SavedModel computes.

The answer text is cut from the original context by character offsets. For
SQuAD v2.0 the null score of an example is the minimum over its features of
`start_logits[0] + end_logits[0]` ([CLS]); its null odds are
`null_score - best_span_score`, and the answer is "" when
`tfbert.metrics.squad.predicts_no_answer(null_odds, threshold)` (odds
greater than `null_score_diff_threshold`; the metrics' threshold search and
the exported SavedModel use the same rule) or when no valid span exists.
"""

import dataclasses

import numpy as np

from tfbert.metrics.squad import predicts_no_answer

# Null odds written when an example has no valid span at all (a certain
# no-answer); finite so that null_odds.json stays strict JSON.
NO_SPAN_NULL_ODDS = 1e9


@dataclasses.dataclass
class SquadPredictions:
    """Post-processing results, each a dict keyed by question id.

    Attributes:
      predictions: answer text ("" for no answer); `predictions.json`.
      nbest: list of up to n_best_size dicts `text`, `probability`,
        `start_logit`, `end_logit`, `start_char`, `end_char` (-1 for the
        null entry), best first; `nbest_predictions.json`.
      null_odds: v2 only: null score minus best span score;
        `null_odds.json` (the official scorer's `--na-prob-file`).
      best_spans: dict `text`, `start_char`, `end_char`, `score` of the best
        valid span ("", -1, -1, 0.0 if there is none), whatever the null
        decision.
    """

    predictions: dict
    nbest: dict
    null_odds: dict
    best_spans: dict


def _feature_spans(start_logits, end_logits, start_ok, end_ok,
                   max_answer_length, n_best_size):
    """Top valid spans of one feature: lists of (score, i, j)."""
    seq = len(start_logits)
    span = np.arange(max_answer_length)
    ends = np.arange(seq)[:, None] + span[None, :]          # [T, A]
    inside = ends < seq
    ends = np.minimum(ends, seq - 1)
    valid = start_ok[:, None] & end_ok[ends] & inside
    if not valid.any():
        return []
    scores = np.where(valid, start_logits[:, None] + end_logits[ends], -np.inf)
    flat = scores.ravel()
    k = min(n_best_size, int(valid.sum()))
    top = np.argpartition(-flat, k - 1)[:k]
    top = top[np.argsort(-flat[top], kind="stable")]
    return [(float(flat[t]), int(t // max_answer_length),
             int(t // max_answer_length + t % max_answer_length)) for t in top]


def _softmax(scores):
    scores = np.asarray(scores, np.float64)
    exp = np.exp(scores - scores.max())
    return exp / exp.sum()


def postprocess_predictions(examples, features, start_logits, end_logits, *,
                            n_best_size=20, max_answer_length=30,
                            version_2_with_negative=False,
                            null_score_diff_threshold=0.0):
    """Turns feature logits into per-question answers.

    Args:
      examples: list of `SquadExample` (the ones `features` came from).
      features: `SquadFeatures`.
      start_logits, end_logits: float [N, T] (or [N, T'] with T' <= T, e.g.
        trimmed batches), one row per feature.
      n_best_size: entries kept per question in the n-best list.
      max_answer_length: longest answer, in tokens.
      version_2_with_negative: SQuAD v2.0 (predict "" when the null wins).
      null_score_diff_threshold: predict "" when null score minus best span
        score exceeds this.

    Returns:
      `SquadPredictions`.
    """
    start_logits = np.asarray(start_logits, np.float64)
    end_logits = np.asarray(end_logits, np.float64)
    if len(start_logits) != len(features) or len(end_logits) != len(features):
        raise ValueError(f"{len(features)} features but {len(start_logits)} "
                         f"start and {len(end_logits)} end logit rows")
    width = start_logits.shape[1]
    token_start = features.token_start_char[:, :width]
    token_end = features.token_end_char[:, :width]
    is_max = features.token_is_max_context[:, :width]
    by_example = [[] for _ in examples]
    for f, e in enumerate(features.example_index):
        by_example[e].append(f)

    out = SquadPredictions({}, {}, {}, {})
    for example, feature_ids in zip(examples, by_example):
        candidates = []
        null_score, null_logits = np.inf, None
        for f in feature_ids:
            in_context = token_start[f] >= 0
            if start_logits[f, 0] + end_logits[f, 0] < null_score:
                null_score = start_logits[f, 0] + end_logits[f, 0]
                null_logits = (start_logits[f, 0], end_logits[f, 0])
            for score, i, j in _feature_spans(
                    start_logits[f], end_logits[f], in_context & is_max[f],
                    in_context, max_answer_length, n_best_size):
                candidates.append((score, int(token_start[f, i]),
                                   int(token_end[f, j]), start_logits[f, i],
                                   end_logits[f, j]))
        # The same characters can be a candidate in two overlapping
        # windows; keep the higher score.
        candidates.sort(key=lambda c: -c[0])
        seen, entries = set(), []
        for score, start, end, start_logit, end_logit in candidates:
            if (start, end) not in seen:
                seen.add((start, end))
                entries.append({"text": example.context[start:end],
                                "start_logit": float(start_logit),
                                "end_logit": float(end_logit),
                                "start_char": start, "end_char": end,
                                "score": score})
        best = entries[0] if entries else None
        out.best_spans[example.qas_id] = {
            "text": best["text"] if best else "",
            "start_char": best["start_char"] if best else -1,
            "end_char": best["end_char"] if best else -1,
            "score": best["score"] if best else 0.0}

        prediction = best["text"] if best else ""
        if version_2_with_negative and feature_ids:
            entries.append({"text": "", "start_logit": float(null_logits[0]),
                            "end_logit": float(null_logits[1]),
                            "start_char": -1, "end_char": -1,
                            "score": float(null_score)})
            entries.sort(key=lambda e: -e["score"])
            odds = (float(null_score - best["score"]) if best
                    else NO_SPAN_NULL_ODDS)
            out.null_odds[example.qas_id] = odds
            if predicts_no_answer(odds, null_score_diff_threshold):
                prediction = ""
        entries = entries[:n_best_size]
        if not entries:
            entries = [{"text": "", "start_logit": 0.0, "end_logit": 0.0,
                        "start_char": -1, "end_char": -1, "score": 0.0}]
        probabilities = _softmax([e["score"] for e in entries])
        out.nbest[example.qas_id] = [
            {"text": e["text"], "probability": float(p),
             "start_logit": e["start_logit"], "end_logit": e["end_logit"],
             "start_char": e["start_char"], "end_char": e["end_char"]}
            for e, p in zip(entries, probabilities)]
        out.predictions[example.qas_id] = prediction
    return out
