"""Tag schemes of token-classification data: their rules, the labels a
model predicts for them, and the checks that name the first broken tag.

- `iob1`: `O`, `I-T`, `B-T`; an entity starts with I-, and B-T is used only
  right after a word of type T, to start a second adjacent entity.
- `iob2`: `O`, `B-T`, `I-T`; every entity starts with B-T, and I-T only
  continues a B-T or I-T.
- `bioes`: `O`, `B-T`, `I-T`, `E-T`, `S-T`; S-T is a one-word entity, a
  longer one is B-T, I-T..., E-T.
- `plain`: any tag per word (POS tags, for example); no entities.

IOB1 and IOB2 data is predicted and scored as IOB2 (`to_iob2` maps one to
the other without loss); BIOES data keeps its own tags; plain tags are
their own labels.
"""

import re

OUTSIDE = "O"
SCHEMES = ("iob1", "iob2", "bioes", "plain")
# The prefixes each entity scheme's tags may carry, in label order.
PREFIXES = {"iob1": ("B", "I"), "iob2": ("B", "I"),
            "bioes": ("B", "I", "E", "S")}
_TAG = re.compile(r"^([A-Z])-(.+)$")


def is_entity_scheme(scheme):
    """Whether `scheme`'s tags mark entities (spans) rather than words."""
    return scheme in PREFIXES


def model_scheme(scheme):
    """The scheme of the labels a model predicts for `scheme`'s data."""
    return "iob2" if scheme == "iob1" else scheme


def violation(tags, scheme):
    """The first tag of one sentence that breaks `scheme`'s rules.

    Args:
      tags: the sentence's tags, a list of str.
      scheme: one of `SCHEMES`.

    Returns:
      `(index, reason)` of the first broken tag, or None if all are valid.
    """
    if scheme == "plain":
        return None
    allowed = PREFIXES[scheme]
    previous_prefix, previous_type = OUTSIDE, None
    for index, tag in enumerate(tags):
        if tag == OUTSIDE:
            prefix, entity_type = OUTSIDE, None
        else:
            match = _TAG.match(tag)
            if not match or match.group(1) not in allowed:
                return index, (f"is not O or {'-/'.join(allowed)}- followed "
                               f"by an entity type ({scheme.upper()})")
            prefix, entity_type = match.groups()
        continues = entity_type == previous_type
        reason = None
        if scheme == "iob1" and prefix == "B" and not continues:
            reason = (f"B-{entity_type} must follow a word of type "
                      f"{entity_type} in IOB1")
        elif scheme == "iob2" and prefix == "I" and not continues:
            reason = (f"I-{entity_type} must continue B-{entity_type} or "
                      f"I-{entity_type} in IOB2")
        elif scheme == "bioes":
            open_entity = previous_prefix in ("B", "I")
            if prefix in ("I", "E") and not (open_entity and continues):
                reason = (f"{prefix}-{entity_type} must follow "
                          f"B-{entity_type} or I-{entity_type} in BIOES")
            elif prefix in (OUTSIDE, "B", "S") and open_entity:
                reason = (f"follows an unfinished {previous_prefix}-"
                          f"{previous_type} (BIOES needs I-{previous_type} "
                          f"or E-{previous_type} next)")
        if reason:
            return index, reason
        previous_prefix, previous_type = prefix, entity_type
    if scheme == "bioes" and previous_prefix in ("B", "I"):
        return len(tags) - 1, (f"the sentence ends inside an entity (BIOES "
                               f"needs E-{previous_type} or S-{previous_type})")
    return None


def to_iob2(tags):
    """Normalises IOB1, IOB2 or IOBES tags (a list of str) to IOB2.

    S-X becomes B-X and E-X becomes I-X; an I-X that does not continue an
    entity of type X (after O, after another type, or first) becomes B-X.
    IOB1's B-X between two adjacent X entities stays B-X, so IOB1 and IOB2
    inputs both come out as IOB2.
    """
    result = []
    previous_type = None
    for tag in tags:
        if tag == OUTSIDE:
            result.append(tag)
            previous_type = None
            continue
        prefix, entity_type = _TAG.match(tag).groups()
        if prefix in ("B", "S") or entity_type != previous_type:
            result.append(f"B-{entity_type}")
        else:
            result.append(f"I-{entity_type}")
        previous_type = entity_type
    return result


def model_tags(tags, scheme):
    """`tags` (valid in `scheme`) as the model predicts them."""
    return to_iob2(tags) if scheme == "iob1" else list(tags)


def complete_labels(tags, scheme):
    """The label list (id order) for a set of model tags.

    Entity schemes: `O`, then every prefix of the model scheme for each
    type in sorted order (a type seen only as B-T still gets I-T, so every
    entity can continue). Plain: the distinct tags, sorted.
    """
    tags = set(tags)
    if scheme == "plain":
        return sorted(tags)
    types = sorted({tag[2:] for tag in tags if tag != OUTSIDE})
    return [OUTSIDE] + [f"{p}-{t}" for t in types
                        for p in PREFIXES[model_scheme(scheme)]]
