"""Entity metrics against seqeval (default, conlleval-compatible mode)."""

import numpy as np
import pytest
from seqeval import metrics as seqeval

from tfbert.metrics.ner import get_entities, ner_metrics

TYPES = ["PER", "LOC", "ORG"]


def _assert_same_as_seqeval(gold, predicted):
    ours = ner_metrics(gold, predicted)
    assert ours["precision"] == pytest.approx(
        seqeval.precision_score(gold, predicted), abs=1e-12)
    assert ours["recall"] == pytest.approx(
        seqeval.recall_score(gold, predicted), abs=1e-12)
    assert ours["f1"] == pytest.approx(seqeval.f1_score(gold, predicted),
                                       abs=1e-12)
    assert ours["accuracy"] == pytest.approx(
        seqeval.accuracy_score(gold, predicted), abs=1e-12)
    report = seqeval.classification_report(gold, predicted, output_dict=True,
                                           zero_division=0)
    types = {k for k in report if not k.endswith(" avg")}
    assert set(ours["per_type"]) == types
    for entity_type in types:
        for key in ("precision", "recall", "f1"):
            expected = report[entity_type]["f1-score" if key == "f1" else key]
            assert ours["per_type"][entity_type][key] == pytest.approx(
                expected, abs=1e-12), (entity_type, key)
        assert ours["per_type"][entity_type]["support"] == (
            report[entity_type]["support"])


def _random_tags(rng, length, scheme_prefixes):
    tags = []
    for _ in range(length):
        prefix = rng.choice(scheme_prefixes)
        tags.append("O" if prefix == "O" else f"{prefix}-{rng.choice(TYPES)}")
    return tags


@pytest.mark.parametrize("prefixes", [("O", "B", "I"),
                                      ("O", "B", "I", "E", "S")])
def test_random_predictions_match_seqeval(prefixes):
    rng = np.random.default_rng(len(prefixes))
    gold, predicted = [], []
    for _ in range(300):
        length = int(rng.integers(1, 12))
        gold.append(_random_tags(rng, length, prefixes))
        # Half the time a corrupted copy of gold, so many entities match.
        if rng.random() < 0.5:
            predicted.append(_random_tags(rng, length, prefixes))
        else:
            copy = list(gold[-1])
            for i in rng.choice(length, size=max(1, length // 4)):
                copy[i] = _random_tags(rng, 1, prefixes)[0]
            predicted.append(copy)
    _assert_same_as_seqeval(gold, predicted)


def test_adversarial_predictions_match_seqeval():
    gold = [
        ["B-PER", "I-PER", "O", "B-LOC"],          # entity at sentence end
        ["I-ORG", "I-ORG", "O"],                    # I- without B- (IOB1)
        ["B-PER", "I-PER", "I-PER"],
        ["B-LOC", "B-LOC", "I-LOC"],
        ["O", "O", "O"],
        ["B-ORG"],
    ]
    predicted = [
        ["B-PER", "I-PER", "O", "I-LOC"],          # I- at the end
        ["B-ORG", "I-ORG", "O"],
        ["B-PER", "I-LOC", "I-PER"],                # type change mid-entity
        ["B-LOC", "I-LOC", "I-LOC"],                # merged entities
        ["I-PER", "O", "B-MISC"],                   # spurious, type unseen in gold
        ["I-ORG"],
    ]
    _assert_same_as_seqeval(gold, predicted)
    # Entities never run across sentences: [B-PER] + [I-PER] are two.
    _assert_same_as_seqeval([["B-PER"], ["I-PER"]], [["B-PER"], ["I-PER"]])
    _assert_same_as_seqeval([["O"]], [["B-PER"]])  # no gold entity at all


def test_get_entities_by_hand():
    assert get_entities(["I-PER", "I-PER", "B-PER", "I-LOC", "O", "B-ORG"]) == [
        ("PER", 0, 1), ("PER", 2, 2), ("LOC", 3, 3), ("ORG", 5, 5)]
    assert get_entities(["S-PER", "B-LOC", "E-LOC", "E-LOC"]) == [
        ("PER", 0, 0), ("LOC", 1, 2), ("LOC", 3, 3)]


def _random_sentences(rng, prefixes, n_sentences=300):
    tags = ["O"] + [f"{p}-{t}" for t in TYPES for p in prefixes]
    return [list(rng.choice(tags, size=rng.integers(1, 12)))
            for _ in range(n_sentences)]


def test_bioes_is_scored_as_seqeval_strict_mode():
    """Random (often ill-formed) BIOES sequences: only well-formed entities
    count, exactly as seqeval's strict IOBES mode."""
    from seqeval.scheme import IOBES

    rng = np.random.default_rng(3)
    gold = _random_sentences(rng, "BIES")
    predicted = [[t if rng.random() < 0.7 else rng.choice(s) for t in s]
                 for s in gold]
    ours = ner_metrics(gold, predicted, scheme="bioes")
    strict = {"mode": "strict", "scheme": IOBES}
    for key, score in (("precision", seqeval.precision_score),
                       ("recall", seqeval.recall_score),
                       ("f1", seqeval.f1_score)):
        assert ours[key] == pytest.approx(score(gold, predicted, **strict),
                                          abs=1e-12), key
    report = seqeval.classification_report(gold, predicted, output_dict=True,
                                           zero_division=0, **strict)
    for entity_type in TYPES:
        assert ours["per_type"][entity_type]["f1"] == pytest.approx(
            report[entity_type]["f1-score"], abs=1e-12)
        assert (ours["per_type"][entity_type]["support"]
                == report[entity_type]["support"])
    # Strict mode drops chunks the lenient rules keep.
    assert ours["num_entities"] < ner_metrics(gold, predicted)["num_entities"]


def test_iob1_is_scored_as_seqeval_default_mode():
    rng = np.random.default_rng(4)
    gold = _random_sentences(rng, "BI")
    predicted = [[t if rng.random() < 0.7 else rng.choice(s) for t in s]
                 for s in gold]
    ours = ner_metrics(gold, predicted, scheme="iob1")
    assert ours["f1"] == pytest.approx(seqeval.f1_score(gold, predicted),
                                       abs=1e-12)


def test_plain_tag_metrics_match_scikit_learn():
    from sklearn import metrics as sk

    from tfbert.metrics.ner import tag_metrics

    rng = np.random.default_rng(5)
    pos = np.array(["NN", "NNP", "VB", "DT", "IN", "JJ"])
    gold = [list(rng.choice(pos[:5], size=rng.integers(1, 15)))
            for _ in range(200)]
    predicted = [[t if rng.random() < 0.6 else rng.choice(pos) for t in s]
                 for s in gold]
    ours = tag_metrics(gold, predicted)
    flat_gold = [t for s in gold for t in s]
    flat_predicted = [t for s in predicted for t in s]
    assert ours["accuracy"] == pytest.approx(
        sk.accuracy_score(flat_gold, flat_predicted), abs=1e-12)
    assert ours["macro_f1"] == pytest.approx(sk.f1_score(
        flat_gold, flat_predicted, average="macro", zero_division=0),
        abs=1e-12)
    labels = sorted(set(flat_gold) | set(flat_predicted))
    assert list(ours["per_tag"]) == labels
    precision, recall, f1, support = sk.precision_recall_fscore_support(
        flat_gold, flat_predicted, labels=labels, zero_division=0)
    for i, tag in enumerate(labels):
        scores = ours["per_tag"][tag]
        assert scores["precision"] == pytest.approx(precision[i], abs=1e-12)
        assert scores["recall"] == pytest.approx(recall[i], abs=1e-12)
        assert scores["f1"] == pytest.approx(f1[i], abs=1e-12)
        assert scores["support"] == support[i]
    assert ours["per_tag"]["JJ"]["support"] == 0  # only predicted
