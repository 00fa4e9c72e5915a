"""SQuAD v1.1 and v2.0 metrics, as the official evaluation scripts define them.

Both compare normalised answers: lower-case, delete punctuation
(`string.punctuation`), delete the words a/an/the, collapse whitespace.
Exact match is equality of the normalised strings; F1 is over their
whitespace tokens (bag of words). A question scores the max over its gold
answers; totals are percentages over questions.

v1.1 (`squad_v1_metrics`): a question without a prediction scores 0; a
question without gold answers (an unlabeled file, `answers: []`) cannot be
scored and is left out of the totals (counted and logged as skipped).
v2.0 (`squad_v2_metrics`): gold answers that normalise to "" are dropped
and a question left without gold answers has the single gold answer ""
(a question is "HasAns" when its `answers` list is not empty); F1 between an empty
and a non-empty token list is 0, between two empty ones 1. Results are
split into HasAns/NoAns, and with no-answer scores (`na_probs`, e.g. null
odds) `best_exact`/`best_f1` and their thresholds are searched.
"""

import collections
import logging
import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
    """Lower-cases, strips punctuation and articles, collapses whitespace."""
    text = text.lower()
    text = "".join(c for c in text if c not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction, gold):
    """1 if the normalised strings are equal, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction, gold, empty_match=True):
    """Token-level F1 of the normalised strings.

    With `empty_match` (v2.0) a pair where either side normalises to
    nothing scores 1 if both do, else 0; v1.1 scores every such pair 0.
    """
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(gold).split()
    if empty_match and (not predicted or not expected):
        return float(predicted == expected)
    common = collections.Counter(predicted) & collections.Counter(expected)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted)
    recall = overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def squad_v1_metrics(examples, predictions):
    """Official SQuAD v1.1 `exact_match` and `f1` (percent).

    Args:
      examples: list of `SquadExample` with gold `answers`.
      predictions: dict question id -> predicted text.

    Returns:
      dict `exact_match`, `f1`, `total` (questions scored), `missing`
      (scored questions without a prediction; they score 0) and `skipped`
      (questions without gold answers, not scored; their ids are logged).

    Raises:
      ValueError: no question has a gold answer.
    """
    exact = f1 = 0.0
    missing = 0
    skipped = [e.qas_id for e in examples if not e.answers]
    scored = [e for e in examples if e.answers]
    if not scored:
        raise ValueError(f"none of the {len(examples)} questions has a gold "
                         "answer; there is nothing to score")
    if skipped:
        shown = ", ".join(repr(q) for q in skipped[:5])
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        logging.warning("SQuAD v1.1 scoring skipped %d question(s) without "
                        "gold answers: %s%s", len(skipped), shown, more)
    for example in scored:
        if example.qas_id not in predictions:
            missing += 1
            continue
        prediction = predictions[example.qas_id]
        golds = [text for text, _ in example.answers]
        exact += max(exact_match(prediction, g) for g in golds)
        f1 += max(f1_score(prediction, g, empty_match=False) for g in golds)
    total = len(scored)
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total,
            "total": total, "missing": missing, "skipped": len(skipped)}


def _v2_raw_scores(examples, predictions):
    exact, f1 = {}, {}
    for example in examples:
        if example.qas_id not in predictions:
            raise KeyError(f"no prediction for question id {example.qas_id!r}")
        golds = [text for text, _ in example.answers
                 if normalize_answer(text)] or [""]
        prediction = predictions[example.qas_id]
        exact[example.qas_id] = max(exact_match(prediction, g) for g in golds)
        f1[example.qas_id] = max(f1_score(prediction, g) for g in golds)
    return exact, f1




def predicts_no_answer(null_odds, threshold):
    """The SQuAD v2.0 no-answer decision, shared by post-processing, the
    metrics and the threshold search: a question is answered "" when its
    null odds (null score minus best span score, see
    `tfbert.data.squad_postprocess`) exceed `threshold`. Works on floats and
    numpy arrays alike."""
    return null_odds > threshold


def _threshold_between(low, high):
    """A threshold that answers odds `low` but not `high` (> `low`): their
    midpoint, which tolerates small numeric differences in recomputed odds
    (e.g. float32 in a SavedModel)."""
    middle = low + (high - low) / 2
    return middle if low <= middle < high else low


def _best_threshold(predictions, scores, na_probs, has_answer):
    """The no-answer threshold that maximises the total score.

    Starts from predicting no-answer everywhere (score = number of
    unanswerable questions) and answers questions in increasing `na_probs`
    order, adding each one's score change. Questions with equal `na_probs`
    are answered together, as a threshold cannot separate them.

    Returns:
      (best score in percent, threshold): answering exactly the questions
      for which `predicts_no_answer(na_probs[q], threshold)` is False
      reproduces the best score.
    """
    order = sorted(scores, key=lambda q: na_probs[q])
    odds = [na_probs[q] for q in order]
    score = best = sum(1 for q in order if not has_answer[q])
    best_answered = 0
    for i, qas_id in enumerate(order):
        if has_answer[qas_id]:
            score += scores[qas_id]
        elif predictions[qas_id]:
            score -= 1
        tie_continues = i + 1 < len(order) and odds[i + 1] == odds[i]
        if score > best and not tie_continues:
            best, best_answered = score, i + 1
    if best_answered == 0:
        threshold = odds[0] - 1.0
    elif best_answered == len(order):
        threshold = odds[-1] + 1.0
    else:
        threshold = _threshold_between(odds[best_answered - 1],
                                       odds[best_answered])
    return 100.0 * best / len(scores), threshold


def squad_v2_metrics(examples, predictions, na_probs=None,
                     na_prob_threshold=0.0):
    """Official SQuAD v2.0 metrics (percent).

    Args:
      examples: list of `SquadExample` (`answers` empty when unanswerable).
      predictions: dict question id -> predicted text ("" = no answer); every
        question needs one. For the best-threshold search these should be
        the best non-null spans (`SquadPredictions.best_spans`), so that the
        search can answer any question.
      na_probs: optional dict question id -> no-answer score, normally the
        null odds of `postprocess_predictions`; a question counts as
        predicted no-answer when `predicts_no_answer(score,
        na_prob_threshold)`. Also enables the best-threshold search, whose
        `best_*_thresh`, passed back as `na_prob_threshold` here or as
        `null_score_diff_threshold` to post-processing, reproduces
        `best_exact` / `best_f1`.
      na_prob_threshold: see `na_probs`; 0.0 like post-processing's
        default (the official script's 1.0 is meant for probabilities).

    Returns:
      dict `exact`, `f1`, `total`, `HasAns_exact`, `HasAns_f1`,
      `HasAns_total`, `NoAns_exact`, `NoAns_f1`, `NoAns_total` (the last
      three groups only when non-empty) and, with `na_probs`, `best_exact`,
      `best_exact_thresh`, `best_f1`, `best_f1_thresh`.

    Raises:
      KeyError: a question has no prediction (the official script fails too).
    """
    exact, f1 = _v2_raw_scores(examples, predictions)
    has_answer = {e.qas_id: bool(e.answers) for e in examples}
    if na_probs is not None:
        for qas_id in exact:
            if predicts_no_answer(na_probs[qas_id], na_prob_threshold):
                exact[qas_id] = f1[qas_id] = float(not has_answer[qas_id])

    def summary(ids):
        return (100.0 * sum(exact[q] for q in ids) / len(ids),
                100.0 * sum(f1[q] for q in ids) / len(ids), len(ids))

    results = dict(zip(("exact", "f1", "total"), summary(list(exact))))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        ids = [q for q in exact if has_answer[q] == wanted]
        if ids:
            results.update(zip((f"{prefix}_exact", f"{prefix}_f1",
                                f"{prefix}_total"), summary(ids)))
    if na_probs is not None:
        raw_exact, raw_f1 = _v2_raw_scores(examples, predictions)
        results["best_exact"], results["best_exact_thresh"] = _best_threshold(
            predictions, raw_exact, na_probs, has_answer)
        results["best_f1"], results["best_f1_thresh"] = _best_threshold(
            predictions, raw_f1, na_probs, has_answer)
    return results
