"""`tfbert.export.query` answers for every export kind."""

import json
import os

import pytest
import tensorflow as tf

from tfbert.export import query

# Every test queries the SavedModels a session fixture exports first (the
# `exports` fixture, ~45 s on a busy machine).
pytestmark = pytest.mark.slow

QUERIES = {
    "classifier": {"sentence1": ["He left.", "Fine."],
                   "sentence2": ["He went away.", "Bad."]},
    "regressor": {"sentence": ["A fine film."]},
    "squad": {"question": ["Who won?", "Where?"],
              "context": ["Ann won the race in Paris.", ""]},
    "ner": {"text": ["John Smith lives in Paris.", "x"]},
}


@pytest.mark.parametrize("kind", sorted(QUERIES))
def test_every_export_kind_is_queried_by_its_signature_inputs(
        kind, exports, capsys):
    base = os.path.dirname(exports[kind])
    argv = [base]
    for name, texts in QUERIES[kind].items():
        for text in texts:
            argv += [f"--{name}", text]
    query.main(argv)
    lines = capsys.readouterr().out.strip().splitlines()
    printed = [json.loads(line) for line in lines]

    served = tf.saved_model.load(exports[kind]).signatures["serving_default"](
        **{name: tf.constant(texts) for name, texts in QUERIES[kind].items()})
    assert len(printed) == len(next(iter(QUERIES[kind].values())))
    for index, example in enumerate(printed):
        assert sorted(example) == sorted(served)
        for name in ("label", "answer_text"):
            if name in served:
                assert example[name] == served[name][index].numpy().decode()
        if "num_words" in served:
            n = int(served["num_words"][index])
            assert example["word_labels"] == [
                t.decode() for t in served["word_labels"][index][:n].numpy()]


def test_a_token_id_signature_is_refused_with_a_clear_message(exports,
                                                              capsys):
    with pytest.raises(SystemExit):
        query.main([exports["ner"], "--signature", "serve_token_ids"])
    assert "is int32; this tool sends text only" in capsys.readouterr().err


def test_positional_texts_fill_a_single_text_input(exports, capsys):
    query.main([exports["ner"], "John lives in Paris.", "--text", "x"])
    printed = [json.loads(line)
               for line in capsys.readouterr().out.strip().splitlines()]
    assert [p["word_texts"] for p in printed] == [
        ["x"], ["John", "lives", "in", "Paris", "."]]
    with pytest.raises(SystemExit):
        query.main([exports["squad"], "Who?", "Me."])
    assert "give each as an option" in capsys.readouterr().err
