"""Reading SWAG-layout CSV and JSONL multiple-choice files, and the
multiple-choice set built from the real SQuAD file."""

import json

import pytest

from tfbert.data.multiple_choice import read_examples
from tfbert.data.squad_choices import sentence_spans, squad_choice_examples

SWAG_HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source," \
              "ending0,ending1,ending2,ending3,label"


def test_swag_csv_layout(tmp_path):
    path = tmp_path / "val.csv"
    path.write_text(
        SWAG_HEADER + "\n"
        '0,anetv_1,5,"He walks. The man","He walks.",The man,gold,'
        'sits down.,"runs, fast.",jumps.,sleeps.,1\n', encoding="utf-8")
    [example] = read_examples(path)
    assert example.guid == f"{path}:2"
    assert example.context == "He walks."
    assert example.choices == ("The man sits down.", "The man runs, fast.",
                               "The man jumps.", "The man sleeps.")
    assert example.label == 1


@pytest.mark.parametrize("row, expected", [
    ('0,v,5,s,Ctx,The man,gold,a,b,c,,1', ":2: 3 non-empty endings"),
    ('0,v,5,s,Ctx,The man,gold,a,b,c,d,4', ":2: label '4' is not a choice"),
    ('0,v,5,s,Ctx,The man,gold,a,b,c,d,-1', ":2: label '-1' is not"),
    ('0,v,5,s,Ctx,The man,gold,a,b,c,d', ":2: expected 12"),
    ('0,v,5,s,Ctx,The man,gold,a,b,c,d,', ":2: no label"),
])
def test_swag_csv_errors_name_file_and_line(tmp_path, row, expected):
    path = tmp_path / "train.csv"
    path.write_text(SWAG_HEADER + "\n" + row + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}{expected}"):
        read_examples(path)


def test_num_choices_must_match_the_header(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text(SWAG_HEADER + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r":1: header has no column ending4"):
        read_examples(path, num_choices=5)
    with pytest.raises(ValueError, match=r":1: columns ending3 beyond"):
        read_examples(path, num_choices=3)


def test_jsonl_layout_and_errors(tmp_path):
    path = tmp_path / "dev.jsonl"
    rows = [{"context": "Q?", "choices": ["a", "b", "c"], "label": 2},
            {"context": "R?", "choices": ["a", "b"], "label": 0}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=f"{path}:2: 2 choices, expected 3"):
        read_examples(path, num_choices=3)
    path.write_text(json.dumps(rows[0]) + "\n")
    assert read_examples(path, num_choices=3)[0].choices == ("a", "b", "c")
    unlabeled = tmp_path / "test.jsonl"
    unlabeled.write_text(json.dumps({"context": "Q?", "choices": ["a", "b"]})
                         + "\n")
    assert read_examples(unlabeled, 2, labeled=False)[0].label is None
    with pytest.raises(ValueError, match=":1: no label"):
        read_examples(unlabeled, 2)


def test_squad_choices_hold_the_answer_once(shared_data_dir):
    source = shared_data_dir / "squad_v1.1" / "dev-v1.1.partA.json"
    examples = squad_choice_examples(source, seed=3)
    data = json.loads(source.read_text(encoding="utf-8"))["data"]
    answers = {qa["question"]: (qa["answers"][0]["text"], p["context"])
               for article in data for p in article["paragraphs"]
               for qa in p["qas"]}
    assert len(examples) > 4000
    labels = [example["label"] for _, example in examples]
    assert min(labels.count(i) for i in range(4)) > len(labels) / 5
    for _, example in examples[::50]:
        answer, context = answers[example["context"]]
        sentences = [context[s:e] for s, e in sentence_spans(context)]
        assert len(set(example["choices"])) == 4
        assert all(c in sentences for c in example["choices"])
        assert answer in example["choices"][example["label"]]
