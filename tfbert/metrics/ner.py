"""Token-classification metrics: entity spans for IOB1/IOB2/BIOES tags,
per-tag scores for plain tags (POS).

An entity (chunk) is a maximal run of tags of one type that conlleval would
group: it starts at B-X or S-X, at an I-X/E-X that follows O, E-, S- or a
different type (an entity may begin without B-), and ends before B-, S-, O,
a type change, or right after E- or S-. These are the rules of conlleval
and of seqeval's default mode, used for IOB1 and IOB2. BIOES is scored
strictly (seqeval's `mode="strict", scheme=IOBES`): only a chunk that is
one S-X, or B-X, I-X..., E-X, is an entity. Entities are found per
sentence, so none crosses a sentence boundary. An entity is correct when
its type, first and last word all match a gold entity.
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


def get_entities(tags, strict_bioes=False):
    """Entities of one sentence.

    Args:
      tags: a list of tag strings (IOB1, IOB2 or IOBES prefixes).
      strict_bioes: keep only the chunks that are well-formed BIOES
        entities (S-X alone, or B-X ... E-X).

    Returns:
      A list of `(type, first, last)` (word indices, last inclusive), in order.
    """
    entities = []
    prev_prefix, prev_type, first = OUTSIDE, "", 0
    for index, tag in enumerate(list(tags) + [OUTSIDE]):
        prefix, entity_type = _split(tag)
        if _ends_before(prev_prefix, prev_type, prefix, entity_type) and (
                not strict_bioes
                or _well_formed(tags[first][0], prev_prefix, index - first)):
            entities.append((prev_type, first, index - 1))
        if _starts_at(prev_prefix, prev_type, prefix, entity_type):
            first = index
        prev_prefix, prev_type = prefix, entity_type
    return entities


def _well_formed(first_prefix, last_prefix, length):
    """Whether a chunk with these first and last prefixes is a BIOES entity
    (inside a chunk every other tag is I- of its type)."""
    if length == 1:
        return first_prefix == "S"
    return first_prefix == "B" and last_prefix == "E"


def _prf(correct, predicted, gold):
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = (2 * precision * recall / (precision + recall)
          if precision + recall else 0.0)
    return precision, recall, f1


def _check_shapes(gold_sentences, predicted_sentences):
    if len(gold_sentences) != len(predicted_sentences):
        raise ValueError(f"{len(gold_sentences)} gold sentences but "
                         f"{len(predicted_sentences)} predicted")
    for index, (gold, predicted) in enumerate(zip(gold_sentences,
                                                  predicted_sentences)):
        if len(gold) != len(predicted):
            raise ValueError(f"sentence {index}: {len(gold)} gold tags but "
                             f"{len(predicted)} predicted")


def ner_metrics(gold_sentences, predicted_sentences, scheme="iob2"):
    """Entity-level precision / recall / F1 and token accuracy.

    Args:
      gold_sentences: list of sentences, each a list of gold tags.
      predicted_sentences: the predicted tags, same shape.
      scheme: "iob1" or "iob2" (conlleval rules) or "bioes" (strict).

    Returns:
      A dict: `precision`, `recall`, `f1` (micro-averaged over entities),
      `accuracy` (fraction of words tagged correctly), `num_entities` (gold),
      `num_predicted`, and `per_type`: {type: {precision, recall, f1,
      support}} for every type seen in gold or predictions. Scores are 0
      where a denominator is 0 (as seqeval reports them).
    """
    _check_shapes(gold_sentences, predicted_sentences)
    strict = scheme == "bioes"
    gold_count = collections.Counter()
    predicted_count = collections.Counter()
    correct_count = collections.Counter()
    words = right = 0
    for gold, predicted in zip(gold_sentences, predicted_sentences):
        words += len(gold)
        right += sum(g == p for g, p in zip(gold, predicted))
        gold_entities = set(get_entities(gold, strict))
        predicted_entities = set(get_entities(predicted, strict))
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


def tag_metrics(gold_sentences, predicted_sentences):
    """Word-level scores of plain tags (POS, for example).

    Args:
      gold_sentences: list of sentences, each a list of gold tags.
      predicted_sentences: the predicted tags, same shape.

    Returns:
      A dict: `accuracy` (fraction of words tagged correctly), `macro_f1`
      (mean of the per-tag F1 over every tag in `per_tag`), `num_words`, and
      `per_tag`: {tag: {precision, recall, f1, support}} for every tag seen
      in gold or predictions (0 where a denominator is 0).
    """
    _check_shapes(gold_sentences, predicted_sentences)
    gold_count = collections.Counter()
    predicted_count = collections.Counter()
    correct_count = collections.Counter()
    for gold, predicted in zip(gold_sentences, predicted_sentences):
        gold_count.update(gold)
        predicted_count.update(predicted)
        correct_count.update(g for g, p in zip(gold, predicted) if g == p)
    per_tag = {}
    for tag in sorted(set(gold_count) | set(predicted_count)):
        precision, recall, f1 = _prf(correct_count[tag], predicted_count[tag],
                                     gold_count[tag])
        per_tag[tag] = {"precision": precision, "recall": recall, "f1": f1,
                        "support": gold_count[tag]}
    words = sum(gold_count.values())
    f1s = [scores["f1"] for scores in per_tag.values()]
    return {"accuracy": sum(correct_count.values()) / words if words else 0.0,
            "macro_f1": sum(f1s) / len(f1s) if f1s else 0.0,
            "num_words": words, "per_tag": per_tag}
