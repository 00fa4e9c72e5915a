"""WikiExtractor output to the BERT pretraining corpus format.

WikiExtractor (attardi) writes each article as

    <doc id="12" url="..." title="Anarchism">
    Anarchism                      <- the title
                                   <- blank lines are ignored
    Anarchism is a political ...   <- one paragraph per line
    History.                       <- section headings: short lines ending in "."
    </doc>

The BERT corpus format is plain UTF-8 text with one sentence per line and a
blank line between documents (what `tfbert.data.pretraining.read_corpus`
reads). Sentence boundaries matter for next-sentence prediction, so the
paragraphs are split with `split_sentences`, a rule-based splitter (no
model): a sentence ends at ".", "!" or "?" (plus closing quotes/brackets)
followed by whitespace and an upper-case letter, digit or opening
quote/bracket, except after a known abbreviation ("Dr.", "e.g.", "U.S.") or
a single-letter initial ("J. R. R. Tolkien").
"""

import glob
import os
import re

# Lower-cased abbreviations (without the final ".") after which a period does
# not end a sentence, even before a capital letter.
ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt ft gen col lt capt sgt rev hon gov sen rep pres
vs etc e.g i.e cf al approx ca c no nos vol vols ed eds fig figs p pp ch sec
jan feb mar apr jun jul aug sep sept oct nov dec inc ltd co corp bros dept
u.s u.k u.n a.d b.c b.c.e c.e ph.d m.d b.a m.a d.c op
""".split())

# Candidate boundary: terminator(s), optional closing quotes/brackets,
# whitespace, then something that can start a sentence.
_BOUNDARY = re.compile(
    r"""([.!?]+)(["'\u2019\u201d)\]]*)(\s+)(?=["'\u2018\u201c(\[]?[A-Z0-9])""")
_TOKEN_BEFORE = re.compile(r"(\S+)$")
_DOC_START = re.compile(r'^<doc\s[^>]*>\s*$')
_HEADING_MAX_WORDS = 10
# Template and HTML residue WikiExtractor leaves in some paragraphs.
_MARKUP = re.compile(r"\{\{|\}\}|#if:|#switch:|</?[a-zA-Z][a-zA-Z0-9]*(?:[\s>/]|$)|^\||=\"")


def _is_abbreviation(text_before):
    """Whether the word ending just before a "." is an abbreviation."""
    match = _TOKEN_BEFORE.search(text_before)
    if match is None:
        return False
    word = match.group(1).lstrip("\"'(\u201c\u2018[").lower()
    if len(word) == 1 and word.isalpha():
        return True  # An initial: "J. R. R. Tolkien", "Franklin D. Roosevelt".
    return word in ABBREVIATIONS


def split_sentences(paragraph):
    """Splits one paragraph into sentences.

    Args:
      paragraph: str, one paragraph (no line breaks needed).

    Returns:
      list of str, the sentences stripped of surrounding whitespace, in
      order; empty for an empty paragraph. Joining them with single spaces
      gives back the paragraph up to whitespace.
    """
    sentences = []
    start = 0
    for match in _BOUNDARY.finditer(paragraph):
        if match.group(1) == "." and _is_abbreviation(
                paragraph[start:match.start(1)]):
            continue
        sentence = paragraph[start:match.end(2)].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end(3)
    rest = paragraph[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


def is_heading(line):
    """Whether a WikiExtractor paragraph line is a section heading: at most
    ten words, ending in "." with no other sentence terminator. (A real
    one-sentence paragraph that short is rare and is dropped too.)"""
    line = line.strip()
    return (line.endswith(".") and len(line.split()) <= _HEADING_MAX_WORDS
            and not re.search(r"[.!?]", line[:-1]))


def read_wikiextractor(path):
    """Reads the articles of one WikiExtractor output file.

    Args:
      path: a file of `<doc ...>` ... `</doc>` blocks.

    Yields:
      `(title, paragraphs)`: the article title (its first line) and its
      remaining non-blank lines, in order.

    Raises:
      ValueError: naming `path:line` for text outside a `<doc>` block, a
        `<doc>` inside another, or a block that is never closed.
    """
    path = os.fspath(path)
    lines = None
    start_line = 0
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.strip()
            if _DOC_START.match(stripped):
                if lines is not None:
                    raise ValueError(
                        f"{path}:{number}: <doc> opened before the <doc> of "
                        f"line {start_line} was closed")
                lines, start_line = [], number
            elif stripped == "</doc>":
                if lines is None:
                    raise ValueError(f"{path}:{number}: </doc> without <doc>")
                if lines:
                    yield lines[0], lines[1:]
                lines = None
            elif stripped:
                if lines is None:
                    raise ValueError(
                        f"{path}:{number}: text outside a <doc ...> block: "
                        f"{stripped[:60]!r}")
                lines.append(stripped)
    if lines is not None:
        raise ValueError(f"{path}:{start_line}: <doc> is never closed")


def is_markup(line):
    """Whether a paragraph line holds template or HTML residue."""
    return _MARKUP.search(line) is not None


def article_sentences(paragraphs, drop_headings=True):
    """The sentences of one article's paragraphs (headings and lines with
    markup residue dropped)."""
    sentences = []
    for paragraph in paragraphs:
        if (drop_headings and is_heading(paragraph)) or is_markup(paragraph):
            continue
        sentences.extend(split_sentences(paragraph))
    return sentences


def convert_wikiextractor(input_pattern, output_path, drop_headings=True,
                          min_sentences=2):
    """Writes WikiExtractor files as a BERT pretraining corpus.

    Args:
      input_pattern: a glob (or one path) of WikiExtractor files, read in
        sorted order.
      output_path: the corpus file to write: one sentence per line, a blank
        line between articles. Titles and markup residue are dropped.
      drop_headings: drop section-heading lines (see `is_heading`).
      min_sentences: articles with fewer sentences are skipped (a document
        needs two sentences to give an actual-next pair).

    Returns:
      `(num_documents, num_sentences)` written.
    """
    paths = sorted(glob.glob(os.fspath(input_pattern)))
    if not paths:
        raise FileNotFoundError(f"no files match {input_pattern!r}")
    num_documents = num_sentences = 0
    with open(output_path, "w", encoding="utf-8", newline="\n") as out:
        for path in paths:
            for _, paragraphs in read_wikiextractor(path):
                sentences = article_sentences(paragraphs, drop_headings)
                if len(sentences) < min_sentences:
                    continue
                if num_documents:
                    out.write("\n")
                out.write("\n".join(sentences) + "\n")
                num_documents += 1
                num_sentences += len(sentences)
    return num_documents, num_sentences
