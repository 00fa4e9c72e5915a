"""Reading tagged sentences: CoNLL column files and JSONL.

A CoNLL file has one token per line, whitespace-separated columns with the
token first (`EU NNP B-NP B-ORG`: token, POS, chunk, NER), a blank line
between sentences and `-DOCSTART-` lines between documents; the tags are
read from one column (the last by default). A JSONL file has one sentence
per line: `{"tokens": [...], "tags": [...]}`.

Tags follow a scheme (`tfbert.data.tag_schemes`: IOB1, IOB2, BIOES or
plain); a tag that breaks it is an error naming `file:line`. Entity tags
are returned as the model predicts them (IOB1 becomes IOB2).
"""

import dataclasses
import os

from tfbert.data import tag_schemes
from tfbert.data.table import read_table
from tfbert.data.tag_schemes import OUTSIDE


@dataclasses.dataclass
class NerSentence:
    """One tagged sentence.

    Attributes:
      words: the tokens (first column).
      tags: the model's tags, one per word (None if the file has no tag
        column).
      path: the file it was read from.
      line_numbers: the 1-based line of each word, for error messages.
    """

    words: list
    tags: list | None
    path: str = ""
    line_numbers: list = dataclasses.field(default_factory=list)


def _tagged(path, words, tags, lines, scheme):
    """A `NerSentence` from raw tags valid in `scheme` (else ValueError
    naming the line of the first broken tag)."""
    if tags is not None:
        broken = tag_schemes.violation(tags, scheme)
        if broken:
            index, reason = broken
            raise ValueError(f"{path}:{lines[index]}: tag {tags[index]!r} "
                             f"{reason}")
        tags = tag_schemes.model_tags(tags, scheme)
    return NerSentence(list(words), tags, path, list(lines))


def read_tagged(path, require_tags=True, tag_column=None, scheme="iob2"):
    """Reads a JSONL file (by its `.jsonl` extension) or a CoNLL file.

    Args:
      path: the file (UTF-8).
      require_tags: if False, a file without tags is accepted (its
        sentences have `tags=None`).
      tag_column: CoNLL only: the 0-based column of the tags (the token is
        column 0); default the last.
      scheme: the tags' scheme, one of `tag_schemes.SCHEMES`.

    Returns:
      A list of `NerSentence`.
    """
    if os.fspath(path).lower().endswith(".jsonl"):
        return read_jsonl(path, require_tags, scheme)
    return read_conll(path, require_tags, tag_column, scheme)


def read_jsonl(path, require_tags=True, scheme="iob2"):
    """Reads a JSONL file of `{"tokens": [str], "tags": [str]}` objects.

    Raises:
      ValueError naming `path:line` for a line that is not an object, a
      missing `tokens` (or `tags`, with `require_tags`), a value that is
      not a list of non-empty strings, an empty sentence, different
      numbers of tokens and tags, or a tag that breaks `scheme`.
    """
    rows = read_table(path, required=("tokens", "tags") if require_tags
                      else ("tokens",))
    sentences = []
    for row in rows:
        fields = {}
        for name in ("tokens", "tags"):
            value = row.get(name)
            if name == "tags" and value is None:
                continue
            if not (isinstance(value, list) and value
                    and all(isinstance(v, str) and v.strip() for v in value)):
                raise ValueError(f"{row.where}: {name!r} must be a non-empty "
                                 "list of non-empty strings")
            fields[name] = value
        tags = fields.get("tags")
        if tags is not None and len(tags) != len(fields["tokens"]):
            raise ValueError(f"{row.where}: {len(fields['tokens'])} tokens "
                             f"but {len(tags)} tags")
        sentences.append(_tagged(row.path, fields["tokens"], tags,
                                 [row.line] * len(fields["tokens"]), scheme))
    return sentences


def read_conll(path, require_tags=True, tag_column=None, scheme="iob2"):
    """Reads a CoNLL column file.

    Args:
      path: the file (UTF-8).
      require_tags: if False, a file with only the token column is accepted
        (its sentences have `tags=None`).
      tag_column: the 0-based column of the tags; default the last.
      scheme: the tags' scheme, one of `tag_schemes.SCHEMES`.

    Returns:
      A list of `NerSentence` (entity tags as the model predicts them).

    Raises:
      ValueError: naming `path:line` for a line whose column count differs
        from the file's first token line, a tag column the file does not
        have, a tag that breaks `scheme`, or invalid UTF-8; naming `path`
        when it has no sentence (empty, or only `-DOCSTART-` and blank
        lines).
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
            sentences.append(_tagged(path, words,
                                     tags if num_columns > 1 else None,
                                     lines, scheme))
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
                if num_columns > 1 and tag_column is not None and not (
                        1 <= tag_column < num_columns):
                    raise ValueError(
                        f"{path}:{line_number}: no tag column {tag_column}: "
                        f"the line has columns 0 (token) to "
                        f"{num_columns - 1}")
            if len(columns) != num_columns:
                raise ValueError(
                    f"{path}:{line_number}: expected {num_columns} columns "
                    f"(as on the first token line), got {len(columns)}: "
                    f"{line!r}")
            if num_columns > 1:
                tags.append(columns[-1 if tag_column is None else tag_column])
            words.append(columns[0])
            lines.append(line_number)
    end_sentence()
    if not sentences:
        raise ValueError(f"{path} has no examples (no token lines)")
    return sentences


def labels_from_sentences(sentences, scheme="iob2"):
    """The label list for the tags in `sentences`
    (`tag_schemes.complete_labels`)."""
    return tag_schemes.complete_labels(
        (tag for s in sentences for tag in s.tags), scheme)


def parse_labels(labels, scheme="iob2"):
    """The label set `labels` (a str) gives: a file with one label per
    line, or a comma-separated list. Entity labels are tags of the model's
    scheme and must include `O`; a type given with only some prefixes gets
    the others added."""
    if os.path.isfile(labels):
        given = []
        with open(labels, "rb") as f:
            for line_number, raw in enumerate(f, start=1):
                try:
                    label = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    raise ValueError(f"{labels}:{line_number}: invalid UTF-8 "
                                     f"at byte {e.start}") from None
                if label:
                    given.append(label)
    else:
        given = [label.strip() for label in labels.split(",")
                 if label.strip()]
    if not tag_schemes.is_entity_scheme(scheme):
        if not given:
            raise ValueError("`labels` is empty")
        return tag_schemes.complete_labels(given, scheme)
    prefixes = tag_schemes.PREFIXES[tag_schemes.model_scheme(scheme)]
    for label in given:
        if label != OUTSIDE and not (label[:1] in prefixes
                                     and label[1:2] == "-" and label[2:]):
            raise ValueError(
                f"`labels`: {label!r} is not O or "
                f"{'-/'.join(prefixes)}-<type>")
    if OUTSIDE not in given:
        raise ValueError("`labels` must include O")
    return tag_schemes.complete_labels(given, scheme)


def check_tags(sentences, labels):
    """Raises ValueError naming `file:line` of the first tag not in
    `labels`."""
    known = set(labels)
    for sentence in sentences:
        for tag, line in zip(sentence.tags or (), sentence.line_numbers):
            if tag not in known:
                raise ValueError(
                    f"{sentence.path}:{line}: tag {tag!r} is not one of the "
                    f"labels {labels} (from the training data or `labels`)")
