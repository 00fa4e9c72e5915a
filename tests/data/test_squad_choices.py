"""`tfbert.data.squad_choices.write_split`: the train and dev files that
`tfbert-squad-choices` writes from the real SQuAD file."""

import json

import pytest

from tfbert.data.multiple_choice import read_examples
from tfbert.data.squad_choices import squad_choice_examples, write_split


def test_split_by_article_keeps_every_paragraph_on_one_side(
        shared_data_dir, tmp_path):
    source = shared_data_dir / "squad_v1.1" / "dev-v1.1.partA.json"
    counts = write_split(source, tmp_path, dev_articles=3)
    articles = json.loads(source.read_text(encoding="utf-8"))["data"]

    def questions(group):
        return {qa["question"] for article in group
                for paragraph in article["paragraphs"]
                for qa in paragraph["qas"]}
    dev_questions = questions(articles[-3:])
    train_questions = questions(articles[:-3])
    train, dev = (read_examples(tmp_path / f"{name}.jsonl")
                  for name in ("train", "dev"))
    assert (len(train), len(dev)) == counts
    assert len(train) > len(dev) > 0
    assert len(train) + len(dev) == len(squad_choice_examples(source))
    assert {e.context for e in dev} <= dev_questions
    assert {e.context for e in train} <= train_questions
    assert not {e.context for e in train} & {e.context for e in dev}


@pytest.mark.parametrize("dev_articles", [0, 24])
def test_dev_articles_out_of_range(shared_data_dir, tmp_path, dev_articles):
    # The file has 24 articles: train and dev each need one.
    with pytest.raises(ValueError, match=r"`dev_articles` must be in \[1, 24\)"):
        write_split(shared_data_dir / "squad_v1.1" / "dev-v1.1.partA.json",
                    tmp_path, dev_articles=dev_articles)
    assert not list(tmp_path.iterdir())
