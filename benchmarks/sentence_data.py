"""Data of the sentence benchmarks, read from ../shared/data."""

import glob
import json


def squad_split(data_dir, test_fraction):
    """SQuAD v1.1 (question, paragraph) pairs split by article, in file
    order: `(train_questions, train_paragraphs), (test_questions, corpus,
    relevant)`, where corpus holds the test articles' paragraphs and
    relevant[i] the set with the index of question i's paragraph."""
    articles = []
    for path in sorted(glob.glob(f"{data_dir}/squad_v1.1/*.json")):
        with open(path, encoding="utf-8") as f:
            articles += json.load(f)["data"]
    cut = int(round(len(articles) * (1 - test_fraction)))
    train_q, train_p = [], []
    for article in articles[:cut]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                train_q.append(qa["question"])
                train_p.append(paragraph["context"])
    test_q, corpus, relevant = [], [], []
    for article in articles[cut:]:
        for paragraph in article["paragraphs"]:
            corpus.append(paragraph["context"])
            for qa in paragraph["qas"]:
                test_q.append(qa["question"])
                relevant.append({len(corpus) - 1})
    return (train_q, train_p), (test_q, corpus, relevant)
