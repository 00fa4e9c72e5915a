"""A real multiple-choice set from SQuAD: which sentence of the paragraph
answers the question?

Each answerable SQuAD question becomes one example: the question is the
context, and the choices are `num_choices` sentences of its paragraph, the
one holding the (first) answer and others drawn at random, in random order.
Questions whose paragraph has fewer sentences, or whose answer crosses a
sentence boundary, are left out. Sentences end at `.`, `!` or `?` followed
by whitespace and an upper-case letter, digit or quote.
"""

import json
import random
import re

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
    with open(squad_path, encoding="utf-8") as f:
        articles = json.load(f)["data"]
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
