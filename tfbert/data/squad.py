"""SQuAD v1.1 / v2.0: reading the JSON and converting it to model features.

A context longer than one input is split into windows ("doc stride"): each
feature is the question and a window of the context packed as the model
family packs a pair (its `PackingLayout`: `[CLS] question [SEP] window [SEP]`
for BERT and ALBERT, `<s> question </s></s> window </s>` for RoBERTa), and
consecutive windows overlap. A context token can therefore appear in several features;
its *max-context* feature is the one where it has the most context on both
sides (`min(left, right) + 0.01 * window_length`, first window on ties, as in
the original BERT), and only spans starting there are predicted.

Character alignment comes from the tokenizer's `tokenize_with_offsets`
(WordPiece, byte-level BPE or SentencePiece; HF's `offset_mapping`, as HF's
run_qa uses), whose byte offsets into the UTF-8 context are converted to
Python (code point) offsets; answer text is always cut from the original
context string, so accents, extra whitespace and CJK survive exactly.
Questions lose their leading whitespace first, as in HF's run_qa (it would
change byte-level BPE tokens).
"""

import dataclasses
import json
import os

import numpy as np
import tensorflow as tf

from tfbert.text.packing_layout import BERT_LAYOUT


@dataclasses.dataclass
class SquadExample:
    """One question about one context.

    Attributes:
      qas_id: the question id.
      question: question text.
      context: the paragraph.
      answers: gold answers as `(text, start_char)` pairs, in file order
        (empty for unanswerable or unlabeled questions).
      is_impossible: SQuAD v2.0 unanswerable question.
    """

    qas_id: str
    question: str
    context: str
    answers: list
    is_impossible: bool = False


@dataclasses.dataclass
class SquadFeatures:
    """Windows of all examples, stacked; N features, T = max_seq_length.

    Attributes:
      input_word_ids, input_mask, input_type_ids: int32 [N, T].
      start_positions, end_positions: int32 [N], the training labels: the
        first answer's first/last token, or 0 (the first special token,
        [CLS] or <s>) when it is not inside the window or the question is
        unanswerable.
      example_index: int32 [N], index of the feature's example.
      token_start_char, token_end_char: int32 [N, T], the context characters
        `[start, end)` behind each input position; -1 for positions outside
        the context (special tokens, question, padding).
      token_is_max_context: bool [N, T], whether this feature is the token's
        max-context window (False outside the context).
    """

    input_word_ids: np.ndarray
    input_mask: np.ndarray
    input_type_ids: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    token_start_char: np.ndarray
    token_end_char: np.ndarray
    token_is_max_context: np.ndarray

    def __len__(self):
        return len(self.example_index)

    def model_inputs(self):
        """The encoder input dict of int32 [N, T] arrays."""
        return {"input_word_ids": self.input_word_ids,
                "input_mask": self.input_mask,
                "input_type_ids": self.input_type_ids}

    def labels(self):
        """Keras labels, keyed like `BertSpanLabeler`'s outputs."""
        return {"start_logits": self.start_positions,
                "end_logits": self.end_positions}


class SquadFormatError(ValueError):
    """A SQuAD file that does not follow the format."""


def read_squad_examples(path):
    """Reads a SQuAD v1.1 or v2.0 JSON file.

    Args:
      path: the JSON file (`{"data": [{"paragraphs": [{"context", "qas":
        [{"id", "question", "answers": [{"text", "answer_start"}],
        "is_impossible"?}]}]}]}`).

    Returns:
      A list of `SquadExample`, in file order.

    Raises:
      SquadFormatError: invalid UTF-8 or malformed JSON (with line and
        column), a missing or mistyped field, an answer whose `answer_start`
        does not point at its text, or a question id used twice (both
        places named); the message names the file and the question id.
      OSError: `path` is missing or a directory.
    """
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, expected a SQuAD "
                                "JSON file")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        column = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise SquadFormatError(
            f"{path}:{line}:{column}: invalid UTF-8 (byte {e.start} of the "
            "file)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SquadFormatError(
            f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise SquadFormatError(f"{path}: top level must be an object with a "
                               "'data' list of articles")

    def field(obj, key, kind, where):
        if not isinstance(obj, dict) or key not in obj:
            raise SquadFormatError(f"{path}: {where}: missing field '{key}'")
        value = obj[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
            raise SquadFormatError(
                f"{path}: {where}: field '{key}' must be {kind.__name__}, got "
                f"{type(value).__name__}")
        return value

    examples = []
    first_place = {}
    for a, article in enumerate(data["data"]):
        for p, paragraph in enumerate(field(article, "paragraphs", list,
                                            f"article {a}")):
            where = f"article {a} paragraph {p}"
            context = field(paragraph, "context", str, where)
            for q, qa in enumerate(field(paragraph, "qas", list, where)):
                place = f"{where} question {q}"
                qas_id = field(qa, "id", str, place)
                if qas_id in first_place:
                    raise SquadFormatError(
                        f"{path}: {place}: question id {qas_id!r} is already "
                        f"used by {first_place[qas_id]}; ids must be unique")
                first_place[qas_id] = place
                where_q = f"question id {qas_id!r}"
                question = field(qa, "question", str, where_q)
                is_impossible = qa.get("is_impossible", False)
                if not isinstance(is_impossible, bool):
                    raise SquadFormatError(
                        f"{path}: {where_q}: field 'is_impossible' must be "
                        "true or false")
                answers = []
                for i, answer in enumerate(field(qa, "answers", list, where_q)):
                    where_a = f"{where_q} answers[{i}]"
                    text = field(answer, "text", str, where_a)
                    start = field(answer, "answer_start", int, where_a)
                    if context[start:start + len(text)] != text:
                        raise SquadFormatError(
                            f"{path}: {where_a}: answer_start {start} does not "
                            f"point at the answer text {text!r} (the context "
                            f"there reads {context[start:start + len(text)]!r})")
                    answers.append((text, start))
                if is_impossible and answers:
                    raise SquadFormatError(
                        f"{path}: {where_q}: is_impossible is true but "
                        "'answers' is not empty")
                examples.append(SquadExample(qas_id, question, context,
                                             answers, is_impossible))
    if not examples:
        raise SquadFormatError(f"{path} has no examples (no questions)")
    return examples


def char_offsets(text, byte_offsets):
    """Byte offsets into `text`'s UTF-8 encoding -> code point offsets.

    Args:
      text: str.
      byte_offsets: int array of offsets that fall on character boundaries
        (or equal the byte length).

    Returns:
      int64 array, same shape: `text.encode()[:b].decode()` has that many
      characters.
    """
    encoded = np.frombuffer(text.encode("utf-8"), np.uint8)
    byte_offsets = np.asarray(byte_offsets, np.int64)
    if len(encoded) == len(text):
        return byte_offsets
    # A byte starts a character unless it is a continuation byte 10xxxxxx.
    starts = np.append((encoded & 0xC0) != 0x80, True)
    chars_before = np.cumsum(starts) - starts
    return chars_before[byte_offsets]


@dataclasses.dataclass
class _TokenizedText:
    ids: np.ndarray
    start_char: np.ndarray
    end_char: np.ndarray


def _tokenize_contexts(tokenizer, texts, chunk_size=256):
    """Unique texts -> {text: _TokenizedText} with character offsets."""
    result = {}
    unique = list(dict.fromkeys(texts))
    for i in range(0, len(unique), chunk_size):
        chunk = unique[i:i + chunk_size]
        ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(chunk))
        for text, row_ids, row_starts, row_ends in zip(
                chunk, ids.to_list(), starts.to_list(), ends.to_list()):
            result[text] = _TokenizedText(
                np.asarray(row_ids, np.int32),
                char_offsets(text, row_starts).astype(np.int32),
                char_offsets(text, row_ends).astype(np.int32))
    return result


def _tokenize_questions(tokenizer, texts, max_query_length, chunk_size=1024):
    ids = []
    texts = [text.lstrip() for text in texts]
    for i in range(0, len(texts), chunk_size):
        ragged = tokenizer.tokenize(tf.constant(texts[i:i + chunk_size]))
        ids.extend(np.asarray(row[:max_query_length], np.int32)
                   for row in ragged.to_list())
    return ids


def answer_token_span(tokens, start_char, end_char):
    """Token span `[first, last]` covering context characters
    `[start_char, end_char)`; None if no token overlaps them.

    As HF's run_qa: `first` is the last token that starts at or before
    `start_char`, `last` the first token that ends at or after `end_char`;
    they differ from the tokens merely overlapping the answer only where
    spans overlap (a SentencePiece "▁" has the span of the character after
    it). Where no token covers an end (the answer starts or ends in
    whitespace), the span shrinks to the tokens inside the answer.

    Args:
      tokens: a tokenized context (`start_char`, `end_char` int arrays).
    """
    first = int(np.searchsorted(tokens.start_char, start_char,
                                side="right")) - 1
    if first < 0 or tokens.end_char[first] <= start_char:
        first = int(np.searchsorted(tokens.end_char, start_char,
                                    side="right"))
    last = int(np.searchsorted(tokens.end_char, end_char, side="left"))
    if last == len(tokens.end_char) or tokens.start_char[last] >= end_char:
        last = int(np.searchsorted(tokens.start_char, end_char,
                                   side="left")) - 1
    if first > last:
        return None
    return first, last


def doc_windows(num_tokens, max_tokens, doc_stride):
    """`(start, length)` of each window over `num_tokens` context tokens.

    Windows start every `min(max_tokens, doc_stride)` tokens until one
    reaches the end; an empty context still gets one (empty) window, so
    every example has a feature.

    Raises:
      ValueError: `max_tokens` or `doc_stride` is not positive (the windows
        would never advance).
    """
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be > 0, got {doc_stride}")
    if max_tokens < 1:
        raise ValueError(f"a window must hold at least one context token, "
                         f"got max_tokens={max_tokens}")
    windows = []
    start = 0
    while True:
        length = min(num_tokens - start, max_tokens)
        windows.append((start, length))
        if start + length >= num_tokens:
            return windows
        start += min(length, doc_stride)


def max_context_windows(num_tokens, windows):
    """int array [num_tokens]: the index of each token's max-context window.

    A token's score in a window is `min(left, right) + 0.01 * length`,
    computed here times 100 in integers so ties (first window wins) are
    exact.
    """
    best = np.zeros(num_tokens, np.int64)
    best_score = np.full(num_tokens, -1, np.int64)
    for w, (start, length) in enumerate(windows):
        positions = np.arange(start, start + length)
        offset = positions - start
        score = 100 * np.minimum(offset, length - 1 - offset) + length
        better = score > best_score[positions]
        best[positions[better]] = w
        best_score[positions[better]] = score[better]
    return best


def convert_examples_to_features(examples, tokenizer, max_seq_length=384,
                                 doc_stride=128, max_query_length=64,
                                 is_training=False, layout=BERT_LAYOUT):
    """Tokenizes and windows examples into `SquadFeatures`.

    Args:
      examples: list of `SquadExample`.
      tokenizer: the family's tokenizer (`BertTokenizer`, `ByteBpeTokenizer`
        or `SentencePieceTokenizer`).
      max_seq_length: tokens per feature, special tokens included.
      doc_stride: tokens between window starts.
      max_query_length: questions are truncated to this many tokens.
      is_training: compute labels from each example's first answer. An
        answerable example without answers is then an error, and one whose
        answer covers no token (only whitespace) is skipped.
      layout: the family's `PackingLayout` (`preprocessor.layout`).

    Returns:
      `SquadFeatures`, features in example order.

    Raises:
      ValueError: `doc_stride` < 1, `max_query_length` < 1, or
        `max_seq_length` leaves no room for a context token.
    """
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be > 0, got {doc_stride}")
    if max_query_length < 1:
        raise ValueError(
            f"max_query_length must be > 0, got {max_query_length}")
    num_special = layout.num_special_tokens(2)
    if max_seq_length <= max_query_length + num_special:
        raise ValueError(
            f"max_seq_length ({max_seq_length}) must exceed max_query_length "
            f"({max_query_length}) + {num_special} special tokens")
    contexts = _tokenize_contexts(tokenizer, [e.context for e in examples])
    questions = _tokenize_questions(tokenizer, [e.question for e in examples],
                                    max_query_length)
    start_ids, middle_ids, end_ids = (layout.token_ids(tokenizer, part)
                                      for part in ("start", "middle", "end"))

    rows = {name: [] for name in (
        "input_word_ids", "input_type_ids", "token_start_char",
        "token_end_char", "token_is_max_context")}
    start_positions, end_positions, example_index = [], [], []
    for index, (example, query) in enumerate(zip(examples, questions)):
        doc = contexts[example.context]
        answer = None
        if is_training and not example.is_impossible:
            if not example.answers:
                raise ValueError(f"question id {example.qas_id!r}: an "
                                 "answerable training question needs an answer")
            text, start_char = example.answers[0]
            answer = answer_token_span(doc, start_char, start_char + len(text))
            if answer is None:
                continue
        max_tokens = max_seq_length - len(query) - num_special
        windows = doc_windows(len(doc.ids), max_tokens, doc_stride)
        best_window = max_context_windows(len(doc.ids), windows)
        offset = len(start_ids) + len(query) + len(middle_ids)
        for w, (start, length) in enumerate(windows):
            ids = np.concatenate([start_ids, query, middle_ids,
                                  doc.ids[start:start + length], end_ids])
            type_ids = np.zeros(len(ids), np.int32)
            type_ids[offset:] = layout.second_type_id
            start_char = np.full(len(ids), -1, np.int32)
            end_char = np.full(len(ids), -1, np.int32)
            start_char[offset:offset + length] = doc.start_char[start:start + length]
            end_char[offset:offset + length] = doc.end_char[start:start + length]
            is_max = np.zeros(len(ids), bool)
            is_max[offset:offset + length] = best_window[start:start + length] == w
            label = (0, 0)
            if answer is not None and (start <= answer[0]
                                       and answer[1] < start + length):
                label = (answer[0] - start + offset, answer[1] - start + offset)
            for name, row in (("input_word_ids", ids),
                              ("input_type_ids", type_ids),
                              ("token_start_char", start_char),
                              ("token_end_char", end_char),
                              ("token_is_max_context", is_max)):
                rows[name].append(row)
            start_positions.append(label[0])
            end_positions.append(label[1])
            example_index.append(index)

    def stack(name, fill, dtype):
        out = np.full((len(rows[name]), max_seq_length), fill, dtype)
        for i, row in enumerate(rows[name]):
            out[i, :len(row)] = row
        return out

    word_ids = stack("input_word_ids", tokenizer.pad_id, np.int32)
    lengths = np.array([len(r) for r in rows["input_word_ids"]], np.int64)
    mask = (np.arange(max_seq_length)[None, :] < lengths[:, None]).astype(np.int32)
    return SquadFeatures(
        input_word_ids=word_ids,
        input_mask=mask,
        input_type_ids=stack("input_type_ids", 0, np.int32),
        start_positions=np.array(start_positions, np.int32),
        end_positions=np.array(end_positions, np.int32),
        example_index=np.array(example_index, np.int32),
        token_start_char=stack("token_start_char", -1, np.int32),
        token_end_char=stack("token_end_char", -1, np.int32),
        token_is_max_context=stack("token_is_max_context", False, bool))
