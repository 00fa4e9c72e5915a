"""Reading and writing WordPiece vocabulary files (`vocab.txt`).

The format is the one Google's BERT, HF and keras-hub use: UTF-8 text, one
token per line, the line number (from 0) is the token id.
"""

import os

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# Where a checkpoint directory keeps its vocabulary: HF, Google and tfbert
# layouts; keras-hub presets.
VOCABULARY_FILES = ("vocab.txt", os.path.join("assets", "tokenizer",
                                              "vocabulary.txt"))


def find_vocabulary(directory):
    """The vocabulary file of a checkpoint directory (the first of
    `VOCABULARY_FILES` that exists), or None."""
    for relative in VOCABULARY_FILES:
        path = os.path.join(os.fspath(directory), relative)
        if os.path.isfile(path):
            return path
    return None


def load_vocabulary(path):
    """Reads a vocabulary file.

    Only the line terminator (`\\n`, `\\r\\n` or a lone trailing `\\r`) is
    stripped: a token may contain spaces at its ends.

    Args:
      path: path of a `vocab.txt`.

    Returns:
      The tokens as a `list[str]`; token `i` has id `i`.

    Raises:
      FileNotFoundError: `path` does not exist.
      ValueError: the file is not UTF-8, has an empty line or a duplicate
        token (the message names `file:line`, lines counted from 1), or lacks
        one of the special tokens [PAD] [UNK] [CLS] [SEP] [MASK].
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"vocabulary file not found: {path}")
    with open(path, "rb") as f:
        raw_lines = f.read().split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()  # The final newline ends the last line; no token.
    tokens = []
    first_line_of = {}
    for index, raw in enumerate(raw_lines):
        line_number = index + 1
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            token = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{path}:{line_number}: invalid UTF-8 at byte {e.start} of the "
                f"line ({raw[e.start:e.start + 4]!r}); a vocabulary must be "
                "UTF-8 text"
            ) from None
        if not token:
            raise ValueError(
                f"{path}:{line_number}: empty line; expected one token per line"
            )
        if token in first_line_of:
            raise ValueError(
                f"{path}:{line_number}: duplicate token {token!r} (first on "
                f"line {first_line_of[token]})"
            )
        first_line_of[token] = line_number
        tokens.append(token)
    missing = [t for t in SPECIAL_TOKENS if t not in first_line_of]
    if missing:
        raise ValueError(
            f"{path}: missing special token(s) {', '.join(missing)}; a BERT "
            f"vocabulary needs all of {', '.join(SPECIAL_TOKENS)}"
        )
    return tokens


def save_vocabulary(tokens, path):
    """Writes `tokens` (a sequence of str, id order) to `path`, one per line.

    Raises:
      ValueError: a token is empty, contains a line break, or repeats.
    """
    seen = set()
    for i, token in enumerate(tokens):
        if not token or "\n" in token or "\r" in token:
            raise ValueError(f"token {i} ({token!r}) cannot be written to a "
                             "one-token-per-line file")
        if token in seen:
            raise ValueError(f"token {i} ({token!r}) is a duplicate")
        seen.add(token)
    with open(os.fspath(path), "w", encoding="utf-8", newline="\n") as f:
        for token in tokens:
            f.write(token + "\n")
