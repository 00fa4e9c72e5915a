"""Entity-level NER metrics with conlleval's (and seqeval's default) rules.

An entity (chunk) is a maximal run of tags of one type that conlleval would
group: it starts at B-X or S-X, at an I-X/E-X that follows O, E-, S- or a
different type (an entity may begin without B-), and ends before B-, S-, O,
a type change, or right after E- or S-. Entities are found per sentence, so
none crosses a sentence boundary. An entity is correct when its type, first
and last word all match a gold entity.
"""

import collections

OUTSIDE = "O"


def _split(tag):
    """(prefix, type) of a tag: "B-PER" -> ("B", "PER"), "O" -> ("O", "")."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    prefix, _, entity_type = tag.partition("-")
    return prefix, entity_type


def _ends_before(prev_prefix, prev_type, prefix, entity_type):
    """Whether an entity that includes the previous tag ends before this one."""
    if prev_prefix == OUTSIDE:
        return False
    return (prev_prefix in ("E", "S") or prefix in ("B", "S", OUTSIDE)
            or prev_type != entity_type)


def _starts_at(prev_prefix, prev_type, prefix, entity_type):
    """Whether this tag begins a new entity."""
    if prefix == OUTSIDE:
        return False
    return (prefix in ("B", "S") or prev_prefix in (OUTSIDE, "E", "S")
            or prev_type != entity_type)


def get_entities(tags):
    """Entities of one sentence.

    Args:
      tags: a list of tag strings (IOB1, IOB2 or IOBES prefixes).

    Returns:
      A list of `(type, first, last)` (word indices, last inclusive), in order.
    """
    entities = []
    prev_prefix, prev_type, first = OUTSIDE, "", 0
    for index, tag in enumerate(list(tags) + [OUTSIDE]):
        prefix, entity_type = _split(tag)
        if _ends_before(prev_prefix, prev_type, prefix, entity_type):
            entities.append((prev_type, first, index - 1))
        if _starts_at(prev_prefix, prev_type, prefix, entity_type):
            first = index
        prev_prefix, prev_type = prefix, entity_type
    return entities


def _prf(correct, predicted, gold):
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = (2 * precision * recall / (precision + recall)
          if precision + recall else 0.0)
    return precision, recall, f1


def ner_metrics(gold_sentences, predicted_sentences):
    """Entity-level precision / recall / F1 and token accuracy.

    Args:
      gold_sentences: list of sentences, each a list of gold tags.
      predicted_sentences: the predicted tags, same shape.

    Returns:
      A dict: `precision`, `recall`, `f1` (micro-averaged over entities),
      `accuracy` (fraction of words tagged correctly), `num_entities` (gold),
      `num_predicted`, and `per_type`: {type: {precision, recall, f1,
      support}} for every type seen in gold or predictions. Scores are 0
      where a denominator is 0 (as seqeval reports them).
    """
    if len(gold_sentences) != len(predicted_sentences):
        raise ValueError(f"{len(gold_sentences)} gold sentences but "
                         f"{len(predicted_sentences)} predicted")
    gold_count = collections.Counter()
    predicted_count = collections.Counter()
    correct_count = collections.Counter()
    words = right = 0
    for index, (gold, predicted) in enumerate(zip(gold_sentences,
                                                  predicted_sentences)):
        if len(gold) != len(predicted):
            raise ValueError(f"sentence {index}: {len(gold)} gold tags but "
                             f"{len(predicted)} predicted")
        words += len(gold)
        right += sum(g == p for g, p in zip(gold, predicted))
        gold_entities = set(get_entities(gold))
        predicted_entities = set(get_entities(predicted))
        gold_count.update(e[0] for e in gold_entities)
        predicted_count.update(e[0] for e in predicted_entities)
        correct_count.update(e[0] for e in gold_entities & predicted_entities)
    per_type = {}
    for entity_type in sorted(set(gold_count) | set(predicted_count)):
        precision, recall, f1 = _prf(correct_count[entity_type],
                                     predicted_count[entity_type],
                                     gold_count[entity_type])
        per_type[entity_type] = {"precision": precision, "recall": recall,
                                 "f1": f1, "support": gold_count[entity_type]}
    precision, recall, f1 = _prf(sum(correct_count.values()),
                                 sum(predicted_count.values()),
                                 sum(gold_count.values()))
    return {"precision": precision, "recall": recall, "f1": f1,
            "accuracy": right / words if words else 0.0,
            "num_entities": sum(gold_count.values()),
            "num_predicted": sum(predicted_count.values()),
            "per_type": per_type}
