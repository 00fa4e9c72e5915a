"""A real multiple-choice set from SQuAD: which sentence of the paragraph
answers the question?

Each answerable SQuAD question becomes one example: the question is the
context, and the choices are `num_choices` sentences of its paragraph, the
one holding the (first) answer and others drawn at random, in random order.
Questions whose paragraph has fewer sentences, or whose answer crosses a
sentence boundary, are left out. Sentences end at `.`, `!` or `?` followed
by whitespace and an upper-case letter, digit or quote. `write_split`
writes a train and a dev JSONL file (`tfbert.data.multiple_choice`'s
layout) split by article, so no paragraph is in both; `tfbert-squad-choices`
runs it.
"""

import json
import os
import random
import re

from tfbert.utils.atomic import atomic_write
from tfbert.utils.json_file import read_json

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def sentence_spans(text):
    """`(start, end)` character spans of the sentences of `text`."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def squad_choice_examples(squad_path, num_choices=4, seed=0):
    """The examples of a SQuAD JSON file, article by article.

    Returns:
      list of `(article title, {"context": question, "choices": [str],
      "label": int})`, in file order.
    """
    rng = random.Random(seed)
    articles = read_json(squad_path)["data"]
    examples = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            spans = sentence_spans(context)
            if len(spans) < num_choices:
                continue
            for qa in paragraph["qas"]:
                if qa.get("is_impossible") or not qa["answers"]:
                    continue
                answer = qa["answers"][0]
                start = answer["answer_start"]
                end = start + len(answer["text"])
                holding = [i for i, (s, e) in enumerate(spans)
                           if s <= start and end <= e]
                if not holding:
                    continue
                others = rng.sample([i for i in range(len(spans))
                                     if i != holding[0]], num_choices - 1)
                order = [holding[0], *others]
                rng.shuffle(order)
                examples.append((article["title"], {
                    "context": qa["question"],
                    "choices": [context[slice(*spans[i])] for i in order],
                    "label": order.index(holding[0])}))
    return examples


def split_by_article(examples, dev_articles):
    """`(train, dev)`: the examples of `squad_choice_examples`, dev those of
    the last `dev_articles` articles (in file order), without their titles.
    Raises ValueError unless 1 <= dev_articles < the number of articles."""
    titles = list(dict.fromkeys(title for title, _ in examples))
    if not 1 <= dev_articles < len(titles):
        raise ValueError(f"`dev_articles` must be in [1, {len(titles)}) "
                         f"for {len(titles)} articles, got {dev_articles}")
    dev_titles = set(titles[-dev_articles:])
    return ([e for t, e in examples if t not in dev_titles],
            [e for t, e in examples if t in dev_titles])


def write_split(squad_path, output_dir, dev_articles=5, num_choices=4,
                seed=0):
    """Writes OUTPUT_DIR/train.jsonl and OUTPUT_DIR/dev.jsonl (one
    `{"context", "choices", "label"}` object per line) from a SQuAD JSON
    file, split by `split_by_article`.

    Returns:
      `(number of train examples, number of dev examples)`.
    """
    return write_splits(split_by_article(
        squad_choice_examples(squad_path, num_choices, seed), dev_articles),
        output_dir)


def write_splits(splits, output_dir):
    """Writes the `(train, dev)` examples of `split_by_article` to
    OUTPUT_DIR/train.jsonl and OUTPUT_DIR/dev.jsonl; returns their counts."""
    os.makedirs(output_dir, exist_ok=True)
    for name, rows in zip(("train", "dev"), splits):
        with atomic_write(os.path.join(output_dir, f"{name}.jsonl")) as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
    return tuple(len(rows) for rows in splits)
