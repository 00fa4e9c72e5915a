"""SQuAD metrics on hand-made predictions; expected values worked out by hand
from the official v1.1 / v2.0 evaluation scripts' definitions."""

import pytest

from tfbert.data.squad import SquadExample
from tfbert.metrics import squad as m


def _ex(qas_id, *golds):
    return SquadExample(qas_id, "?", "", [(g, 0) for g in golds],
                        is_impossible=not golds)


@pytest.mark.parametrize("text,expected", [
    ("The Denver Broncos", "denver broncos"),          # article, case
    ("an apple a day", "apple day"),                    # articles
    ("theater", "theater"),                             # not a whole word
    ("U.S.-based, (mostly)!", "usbased mostly"),        # punctuation deleted
    ("  New \t York\n", "new york"),                    # whitespace
    ("A", ""),
])
def test_normalize_answer(text, expected):
    assert m.normalize_answer(text) == expected


def test_v1_rules():
    examples = [
        _ex("case", "Denver Broncos"),
        _ex("article", "the Eiffel Tower"),
        _ex("punct", "U.S."),
        _ex("space", "New York City"),
        _ex("multi", "1990", "in 1990", "the year 1990"),
        _ex("partial", "the Carolina Panthers"),
        _ex("wrong", "Paris"),
        _ex("missing", "x"),
    ]
    predictions = {
        "case": "DENVER broncos",       # EM 1, F1 1
        "article": "Eiffel Tower",      # EM 1, F1 1
        "punct": "US",                  # "us" == "us": EM 1
        "space": " New  York\tCity ",   # EM 1
        "multi": "year 1990",           # EM 1 vs "the year 1990"
        # "carolina" vs "carolina panthers": P 1, R 1/2, F1 2/3
        "partial": "Carolina",
        "wrong": "London",              # 0, 0
    }
    result = m.squad_v1_metrics(examples, predictions)
    assert result["total"] == 8 and result["missing"] == 1
    assert result["skipped"] == 0
    assert result["exact_match"] == pytest.approx(100 * 5 / 8)
    assert result["f1"] == pytest.approx(100 * (5 + 2 / 3) / 8)


def test_f1_max_over_golds_and_repeated_tokens():
    # pred "a b b c" -> tokens [b, b, c] ("a" dropped); gold "b c c d":
    # common = {b: 1, c: 1} = 2; P = 2/3, R = 2/4, F1 = 4/7.
    assert m.f1_score("a b b c", "b c c d") == pytest.approx(4 / 7)
    examples = [_ex("q", "b c c d", "b b")]
    # vs "b b": common {b: 2}; P = 2/3, R = 1, F1 = 0.8 (the max).
    assert m.squad_v1_metrics(examples, {"q": "a b b c"})["f1"] == (
        pytest.approx(80.0))


def test_empty_prediction_v1_vs_v2():
    # v1.1: empty vs empty still scores F1 0 (no common tokens) but EM 1.
    examples = [_ex("q", "the")]
    v1 = m.squad_v1_metrics(examples, {"q": ""})
    assert (v1["exact_match"], v1["f1"]) == (100.0, 0.0)
    # v2.0: a gold that normalises to "" is dropped; none left -> gold "".
    v2 = m.squad_v2_metrics(examples, {"q": ""})
    assert (v2["exact"], v2["f1"]) == (100.0, 100.0)
    assert v2["HasAns_total"] == 1  # it has an answers list entry


def test_v2_has_and_no_answer_breakdown():
    examples = [
        _ex("h1", "Carolina Panthers"),
        _ex("h2", "1990"),
        _ex("n1"),
        _ex("n2"),
    ]
    predictions = {
        "h1": "Panthers",   # EM 0, F1: P 1, R 1/2 -> 2/3
        "h2": "",           # empty vs answer: 0, 0
        "n1": "",           # correct abstention: 1, 1
        "n2": "Paris",      # answered an unanswerable: 0, 0
    }
    r = m.squad_v2_metrics(examples, predictions)
    assert r["total"] == 4 and r["HasAns_total"] == 2 and r["NoAns_total"] == 2
    assert r["exact"] == pytest.approx(25.0)
    assert r["f1"] == pytest.approx(100 * (2 / 3 + 1) / 4)
    assert r["HasAns_exact"] == 0.0
    assert r["HasAns_f1"] == pytest.approx(100 * (2 / 3) / 2)
    assert (r["NoAns_exact"], r["NoAns_f1"]) == (50.0, 50.0)
    assert "best_f1" not in r


def test_v2_na_probs_threshold_and_best_threshold_search():
    examples = [_ex("h1", "Panthers"), _ex("h2", "1990"), _ex("n1"),
                _ex("n2")]
    # Non-null answers for every question; na_probs rank them.
    predictions = {"h1": "Panthers", "h2": "1985", "n1": "Paris",
                   "n2": "Rome"}
    na = {"h1": 0.1, "h2": 0.6, "n1": 0.7, "n2": 0.3}
    r = m.squad_v2_metrics(examples, predictions, na_probs=na,
                           na_prob_threshold=0.5)
    # > 0.5 -> no answer: h2 (wrong: 0), n1 (right: 1); h1 1; n2 answered 0.
    assert r["exact"] == pytest.approx(50.0)
    # Search: start with all no-answer = 2 (n1, n2). In na order: h1 +1 -> 3
    # (best: answer h1 only, so any threshold in [0.1, 0.3): the midpoint
    # 0.2); n2 answered -1 -> 2; h2 +0 -> 2; n1 -1 -> 1.
    assert r["best_exact"] == pytest.approx(75.0)
    assert r["best_exact_thresh"] == pytest.approx(0.2)
    assert r["best_f1"] == pytest.approx(75.0)
    again = m.squad_v2_metrics(examples, predictions, na_probs=na,
                               na_prob_threshold=r["best_exact_thresh"])
    assert again["exact"] == pytest.approx(75.0)


def test_v2_best_threshold_when_no_answer_everywhere_wins():
    # Every null odds is negative and every answer is wrong: the best is to
    # answer nothing, which needs a threshold below all odds (not 0.0).
    examples = [_ex("h1", "Panthers"), _ex("n1"), _ex("n2")]
    predictions = {"h1": "Broncos", "n1": "Paris", "n2": "Rome"}
    na = {"h1": -4.0, "n1": -2.0, "n2": -3.0}
    r = m.squad_v2_metrics(examples, predictions, na_probs=na)
    assert r["exact"] == 0.0            # threshold 0 answers all three
    assert r["best_exact"] == pytest.approx(200 / 3)
    assert r["best_exact_thresh"] < -4.0
    again = m.squad_v2_metrics(examples, predictions, na_probs=na,
                               na_prob_threshold=r["best_exact_thresh"])
    assert again["exact"] == pytest.approx(200 / 3)


def test_v2_tied_odds_are_answered_together():
    # h1 (right) and n1 (answered wrongly) share odds 1.0: no threshold
    # answers h1 without n1, so the search may not report "1 + 2 = 3 of 3".
    examples = [_ex("h1", "Panthers"), _ex("n1"), _ex("n2")]
    predictions = {"h1": "Panthers", "n1": "Paris", "n2": "Rome"}
    na = {"h1": 1.0, "n1": 1.0, "n2": 2.0}
    r = m.squad_v2_metrics(examples, predictions, na_probs=na)
    # Nothing answered: 2 of 3. h1 + n1: 1 + 0 + 1 = 2 (not better).
    assert r["best_exact"] == pytest.approx(200 / 3)
    assert r["best_exact_thresh"] < 1.0


def test_v1_skips_questions_without_gold_answers(caplog):
    examples = [_ex("a", "Paris"), _ex("b", "Rome"), _ex("unlabeled")]
    predictions = {"a": "Paris", "b": "Lyon", "unlabeled": "Nice"}
    with caplog.at_level("WARNING"):
        result = m.squad_v1_metrics(examples, predictions)
    assert result == {"exact_match": 50.0, "f1": 50.0, "total": 2,
                      "missing": 0, "skipped": 1}
    assert "skipped 1 question(s) without gold answers: 'unlabeled'" in (
        caplog.text)
    with pytest.raises(ValueError, match="none of the 1 questions has a gold"):
        m.squad_v1_metrics([_ex("unlabeled")], predictions)


def test_v2_missing_prediction_is_an_error():
    with pytest.raises(KeyError, match="'n1'"):
        m.squad_v2_metrics([_ex("n1")], {})
