"""SQuAD post-processing on hand-set logits: validity rules, null handling,
and the v2.0 threshold round trip on the real v2.0 article."""

import numpy as np
import pytest

from tfbert.data import squad
from tfbert.data.squad_postprocess import (
    NO_SPAN_NULL_ODDS, postprocess_predictions)
from tfbert.metrics import squad as squad_metrics
from tfbert.text.bert_tokenizer import BertTokenizer

# [CLS] where ? [SEP] new york is big . paris is small . [SEP]
#   0     1   2   3    4   5   6  7  8   9   10   11  12  13
CONTEXT = "New   York is big. Paris is small."


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer.from_pretrained("minilm-l6-h384-uncased")


@pytest.fixture(scope="module")
def single(tokenizer):
    examples = [squad.SquadExample("q", "where?", CONTEXT, [])]
    features = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=16, max_query_length=4)
    assert features.input_mask[0].sum() == 14
    return examples, features


def _run(data, starts, ends, **kwargs):
    examples, features = data
    start_logits = np.zeros(features.input_word_ids.shape, np.float32)
    end_logits = np.zeros_like(start_logits)
    for (f, i), v in starts.items():
        start_logits[f, i] = v
    for (f, i), v in ends.items():
        end_logits[f, i] = v
    return postprocess_predictions(examples, features, start_logits,
                                   end_logits, **kwargs)


def test_answer_is_cut_from_the_original_context(single):
    result = _run(single, {(0, 4): 5.0}, {(0, 5): 5.0})
    assert result.predictions == {"q": "New   York"}
    assert result.best_spans["q"] == {"text": "New   York", "start_char": 0,
                                      "end_char": 10, "score": 10.0}
    top = result.nbest["q"][0]
    assert (top["text"], top["start_logit"], top["end_logit"]) == (
        "New   York", 5.0, 5.0)


def test_spans_outside_the_context_are_ignored(single):
    # Question tokens, [CLS] and [SEP] carry the largest logits.
    result = _run(single, {(0, 1): 100.0, (0, 0): 50.0, (0, 13): 80.0,
                           (0, 4): 5.0},
                  {(0, 2): 100.0, (0, 13): 90.0, (0, 0): 50.0, (0, 5): 5.0})
    assert result.predictions["q"] == "New   York"
    assert all(e["start_char"] >= 0 for e in result.nbest["q"])


def test_end_before_start_is_invalid(single):
    # (9, 4) would score 20; valid: (9, 11) = 12 > (4, 4) = 11 > the rest.
    result = _run(single, {(0, 9): 10.0, (0, 4): 1.0},
                  {(0, 4): 10.0, (0, 11): 2.0})
    assert result.predictions["q"] == "Paris is small"
    assert [e["text"] for e in result.nbest["q"][:2]] == [
        "Paris is small", "New"]


def test_max_answer_length(single):
    starts, ends = {(0, 4): 10.0}, {(0, 12): 10.0, (0, 6): 1.0}
    assert _run(single, starts, ends, max_answer_length=9).predictions[
        "q"] == "New   York is big. Paris is small."
    # (4, 12) is 9 tokens long; with 3 the best is (4, 6).
    assert _run(single, starts, ends, max_answer_length=3).predictions[
        "q"] == "New   York is"


def test_nbest_is_deduplicated_sorted_and_normalised(single):
    result = _run(single, {(0, 4): 2.0, (0, 9): 1.0}, {(0, 5): 2.0},
                  n_best_size=5)
    nbest = result.nbest["q"]
    assert len(nbest) == 5
    assert len({(e["start_char"], e["end_char"]) for e in nbest}) == 5
    scores = [e["start_logit"] + e["end_logit"] for e in nbest]
    assert scores == sorted(scores, reverse=True)
    assert sum(e["probability"] for e in nbest) == pytest.approx(1.0)
    # softmax: p0 / p1 = exp(score0 - score1)
    assert nbest[0]["probability"] / nbest[1]["probability"] == pytest.approx(
        np.exp(scores[0] - scores[1]))


def test_v2_null_wins_when_over_threshold(single):
    starts, ends = {(0, 0): 3.0, (0, 4): 1.0}, {(0, 0): 0.0, (0, 5): 1.0}
    # null = 3, best span (4, 5) = 2: null odds 1.
    result = _run(single, starts, ends, version_2_with_negative=True)
    assert result.predictions["q"] == ""
    assert result.null_odds["q"] == pytest.approx(1.0)
    assert result.nbest["q"][0]["text"] == ""
    assert result.best_spans["q"]["text"] == "New   York"
    result = _run(single, starts, ends, version_2_with_negative=True,
                  null_score_diff_threshold=1.5)
    assert result.predictions["q"] == "New   York"


def test_all_null_never_crashes(tokenizer):
    examples = [squad.SquadExample("e", "where?", "", []),
                squad.SquadExample("w", "where?", "   \t ", [])]
    features = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=16, max_query_length=4)
    assert len(features) == 2
    logits = np.random.default_rng(0).normal(size=(2, 16))
    for v2 in (False, True):
        result = postprocess_predictions(examples, features, logits, logits,
                                         version_2_with_negative=v2)
        assert result.predictions == {"e": "", "w": ""}
        assert result.best_spans["e"] == {"text": "", "start_char": -1,
                                          "end_char": -1, "score": 0.0}
        if v2:
            assert result.null_odds == {"e": NO_SPAN_NULL_ODDS,
                                        "w": NO_SPAN_NULL_ODDS}
            assert [e["text"] for e in result.nbest["e"]] == [""]
        else:
            assert result.nbest["e"] == [{
                "text": "", "probability": 1.0, "start_logit": 0.0,
                "end_logit": 0.0, "start_char": -1, "end_char": -1}]


@pytest.fixture(scope="module")
def windows(tokenizer):
    # 100 one-token numbers, windows of 20 starting every 8 (see
    # test_squad.py); context token t of window starting at s sits at input
    # position t - s + 4.
    context = " ".join(str(i) for i in range(100))
    examples = [squad.SquadExample("n", "which?", context, [])]
    features = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=25, doc_stride=8,
        max_query_length=10)
    assert len(features) == 11
    return examples, features


def test_only_max_context_starts_count(windows):
    # Token 42 starts a span in window 24 (f=3, not its max context) with a
    # huge logit, and in window 32 (f=4, its max context) with a small one.
    # (Ends need not be max-context: (37, 43) in window 24 scores 0 + 2.)
    result = _run(windows, {(3, 42 - 24 + 4): 50.0, (4, 42 - 32 + 4): 2.0},
                  {(3, 43 - 24 + 4): 2.0, (4, 43 - 32 + 4): 2.0})
    assert result.predictions["n"] == "42 43"
    assert result.best_spans["n"]["score"] == 4.0


def test_v2_null_score_is_min_over_windows(windows):
    starts = {(f, 0): 5.0 for f in range(11)}
    starts[7, 0] = -1.0           # window 56: null = -1 + 0.5
    ends = {(f, 0): 0.5 for f in range(11)}
    starts[4, 42 - 32 + 4] = 1.0
    ends[4, 42 - 32 + 4] = 1.0
    result = _run(windows, starts, ends, version_2_with_negative=True,
                  null_score_diff_threshold=-3.0)
    assert result.null_odds["n"] == pytest.approx(-0.5 - 2.0)
    assert result.predictions["n"] == ""
    result = _run(windows, starts, ends, version_2_with_negative=True)
    assert result.predictions["n"] == "42"


V2 = "squad_v2.0/dev-v2.0.Computational_complexity_theory.json"


@pytest.fixture(scope="module")
def v2_article(shared_data_dir, tokenizer):
    examples = squad.read_squad_examples(shared_data_dir / V2)
    features = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=192, doc_stride=64,
        max_query_length=32)
    return examples, features


def _synthetic_logits(examples, features, right_share, seed):
    """Random logits with a low null score everywhere (all null odds
    negative, as an under-trained model gives) and high logits on the gold
    span of `right_share` of the answerable questions."""
    rng = np.random.default_rng(seed)
    starts = rng.normal(size=features.input_word_ids.shape)
    ends = rng.normal(size=features.input_word_ids.shape)
    starts[:, 0] = ends[:, 0] = -6.0
    for f, e in enumerate(features.example_index):
        example = examples[e]
        if not example.answers or rng.random() >= right_share:
            continue
        text, begin = example.answers[0]
        inside = np.flatnonzero(
            (features.token_start_char[f] < begin + len(text))
            & (features.token_end_char[f] > begin)
            & features.token_is_max_context[f])
        if len(inside) and features.token_start_char[f, inside[0]] == begin:
            starts[f, inside[0]] = ends[f, inside[-1]] = 9.0
    return starts, ends


@pytest.mark.parametrize("right_share", [0.0, 0.6])
def test_v2_best_threshold_passed_back_reproduces_best_scores(
        v2_article, right_share):
    examples, features = v2_article
    starts, ends = _synthetic_logits(examples, features, right_share, seed=1)
    result = postprocess_predictions(examples, features, starts, ends,
                                     version_2_with_negative=True)
    assert max(result.null_odds.values()) < 0    # threshold 0 answers all
    spans = {q: span["text"] for q, span in result.best_spans.items()}
    best = squad_metrics.squad_v2_metrics(examples, spans,
                                          na_probs=result.null_odds)
    # Independent of the search: try every threshold that separates the
    # sorted odds (and one below all of them).
    odds = sorted(set(result.null_odds.values()))
    exhaustive = max(
        squad_metrics.squad_v2_metrics(
            examples, {q: "" if result.null_odds[q] > t else text
                       for q, text in spans.items()})["exact"]
        for t in [odds[0] - 1.0] + odds)
    assert best["best_exact"] == pytest.approx(exhaustive)
    if right_share == 0.0:    # answering nothing is best: 221 of 418
        assert best["best_exact"] == pytest.approx(100 * 221 / 418)
    else:
        assert best["best_exact"] > 100 * 221 / 418
    for metric in ("exact", "f1"):
        rerun = postprocess_predictions(
            examples, features, starts, ends, version_2_with_negative=True,
            null_score_diff_threshold=best[f"best_{metric}_thresh"])
        scores = squad_metrics.squad_v2_metrics(examples, rerun.predictions)
        assert scores[metric] == pytest.approx(best[f"best_{metric}"])
