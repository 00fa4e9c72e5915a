"""Reading CoNLL column files (NER) and normalising their tags to IOB2.

A CoNLL file has one token per line, whitespace-separated columns with the
token first and the tag last (`EU NNP B-NP B-ORG`), a blank line between
sentences and `-DOCSTART-` lines between documents. Tags may use IOB1 (an
entity starts with I-; B- only separates two adjacent entities of one type),
IOB2 (every entity starts with B-) or IOBES (S- single, E- end); all are
normalised to IOB2, the scheme the model predicts and the metrics score.
"""

import dataclasses
import os
import re

OUTSIDE = "O"
_TAG = re.compile(r"^([BIES])-(.+)$")


@dataclasses.dataclass
class NerSentence:
    """One sentence of a CoNLL file.

    Attributes:
      words: the tokens (first column).
      tags: IOB2 tags, one per word (None if the file has no tag column).
      path: the file it was read from.
      line_numbers: the 1-based line of each word, for error messages.
    """

    words: list
    tags: list | None
    path: str = ""
    line_numbers: list = dataclasses.field(default_factory=list)


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


def read_conll(path, require_tags=True):
    """Reads a CoNLL column file.

    Args:
      path: the file (UTF-8).
      require_tags: if False, a file with only the token column is accepted
        (its sentences have `tags=None`).

    Returns:
      A list of `NerSentence` with IOB2 tags.

    Raises:
      ValueError: naming `path:line` for a line whose column count differs
        from the file's first token line, a tag that is neither `O` nor
        `B-`/`I-`/`E-`/`S-` + type, a missing tag column, or invalid UTF-8;
        naming `path` when it has no sentence (empty, or only `-DOCSTART-`
        and blank lines).
      OSError: `path` is missing or a directory.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, expected a CoNLL "
                                "file")
    sentences = []
    words, tags, lines = [], [], []
    num_columns = None

    def end_sentence():
        if words:
            sentences.append(NerSentence(
                list(words), to_iob2(tags) if num_columns > 1 else None,
                path, list(lines)))
        words.clear()
        tags.clear()
        lines.clear()

    with open(path, "rb") as f:
        for line_number, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}:{line_number}: invalid UTF-8 at "
                                 f"byte {e.start}") from None
            columns = line.split()
            if not columns:
                end_sentence()
                continue
            if columns[0] == "-DOCSTART-":
                end_sentence()
                continue
            if num_columns is None:
                num_columns = len(columns)
                if num_columns < 2 and require_tags:
                    raise ValueError(
                        f"{path}:{line_number}: expected a token and a tag "
                        f"column, got 1 column: {line!r}")
            if len(columns) != num_columns:
                raise ValueError(
                    f"{path}:{line_number}: expected {num_columns} columns "
                    f"(as on the first token line), got {len(columns)}: "
                    f"{line!r}")
            if num_columns > 1:
                tag = columns[-1]
                if tag != OUTSIDE and not _TAG.match(tag):
                    raise ValueError(
                        f"{path}:{line_number}: tag {tag!r} (last column) is "
                        "not O or B-/I-/E-/S- followed by an entity type")
                tags.append(tag)
            words.append(columns[0])
            lines.append(line_number)
    end_sentence()
    if not sentences:
        raise ValueError(f"{path} has no examples (no token lines)")
    return sentences


def labels_from_sentences(sentences):
    """The IOB2 label list for the entity types in `sentences`: `O`, then
    `B-T`, `I-T` for every type T in sorted order (I-T is included even if
    unseen, so every entity can continue)."""
    types = sorted({tag[2:] for s in sentences for tag in s.tags
                    if tag != OUTSIDE})
    return [OUTSIDE] + [f"{p}-{t}" for t in types for p in ("B", "I")]


def parse_labels(spec):
    """Reads `--labels`: a file with one label per line, or a comma-separated
    list. Labels are IOB2 tags and must include `O`; a type given only as
    B-T or I-T gets the other tag added."""
    if os.path.isfile(spec):
        given = []
        with open(spec, "rb") as f:
            for line_number, raw in enumerate(f, start=1):
                try:
                    label = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    raise ValueError(f"{spec}:{line_number}: invalid UTF-8 "
                                     f"at byte {e.start}") from None
                if label:
                    given.append(label)
    else:
        given = [label.strip() for label in spec.split(",") if label.strip()]
    for label in given:
        if label != OUTSIDE and not re.match(r"^[BI]-.+$", label):
            raise ValueError(f"--labels: {label!r} is not O, B-<type> or "
                             "I-<type>")
    if OUTSIDE not in given:
        raise ValueError("--labels must include O")
    types = sorted({label[2:] for label in given if label != OUTSIDE})
    return [OUTSIDE] + [f"{p}-{t}" for t in types for p in ("B", "I")]


def check_tags(sentences, labels):
    """Raises ValueError naming `file:line` of the first tag not in
    `labels`."""
    known = set(labels)
    for sentence in sentences:
        for tag, line in zip(sentence.tags or (), sentence.line_numbers):
            if tag not in known:
                raise ValueError(
                    f"{sentence.path}:{line}: tag {tag!r} (in IOB2) is not one "
                    f"of the labels {labels} (from the training data or --labels)")
