"""The exported SQuAD SavedModel answers like the Python pipeline, loaded in
a fresh process that imports only tensorflow and tensorflow_text."""

import json
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert.config import BertConfig
from tfbert.data import squad
from tfbert.data.squad_postprocess import postprocess_predictions
from tfbert.export import (RequestLimits, export_saved_model,
                           unservable_ops)
from tfbert.export.squad_serving import SquadServingModule
from tfbert.models import BertEncoder, BertSpanLabeler
from tfbert.text.bert_tokenizer import BertTokenizer

from tests.conftest import SHOW_ALL

SETTINGS = dict(max_seq_length=64, doc_stride=16, max_query_length=20)
MAX_ANSWER_LENGTH = 10
# Bounds that let every test example go in one request.
WHOLE_DEV_SET = RequestLimits(max_batch_chars=10**7, max_windows=10**6)

_SERVE = SHOW_ALL + textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
    path, inputs = sys.argv[1], json.load(open(sys.argv[2]))
    loaded = tf.saved_model.load(path)
    out = loaded.signatures["serving_default"](
        question=tf.constant(inputs["question"]),
        context=tf.constant(inputs["context"]))
    ids = loaded.signatures["serve_token_ids"](**{
        k: tf.constant(v, tf.int32) for k, v in inputs["ids"].items()})
    result = {k: v.numpy().tolist() for k, v in out.items()}
    result["answer_text"] = [t.decode() for t in result["answer_text"]]
    result.update({k: v.numpy().tolist() for k, v in ids.items()})
    result["saved_model_cli"] = show_all(path)
    json.dump(result, sys.stdout)
""")


@pytest.fixture(scope="module")
def setup(shared_data_dir):
    tokenizer = BertTokenizer.from_pretrained("minilm-l6-h384-uncased")
    keras.utils.set_random_seed(1)
    model = BertSpanLabeler(BertEncoder(BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=2,
        num_heads=2, intermediate_size=64)))
    examples = squad.read_squad_examples(
        shared_data_dir
        / "squad_v2.0/dev-v2.0.Computational_complexity_theory.json")[:30]
    examples += [
        squad.SquadExample("empty", "What?", "", []),
        squad.SquadExample("unicode", "Où est la tour Eiffel ? " * 8,
                           "  La tour   Eiffel est à Paris, près du café "
                           "東京 résumé.  " * 3, []),
    ]
    features = squad.convert_examples_to_features(examples, tokenizer,
                                                  **SETTINGS)
    assert len(features) > 2 * len(examples)   # several windows per context
    logits = model.predict(features.model_inputs(), verbose=0)
    return tokenizer, model, examples, features, logits


def _expected(setup, version_2):
    """Python post-processing, and the threshold it used."""
    _, _, examples, features, logits = setup
    threshold = 0.0
    if version_2:
        # A threshold between the middle two null odds, so that both
        # outcomes occur and no question sits on the boundary.
        odds = sorted(v for v in postprocess_predictions(
            examples, features, logits["start_logits"], logits["end_logits"],
            max_answer_length=MAX_ANSWER_LENGTH,
            version_2_with_negative=True).null_odds.values() if v < 1e8)
        threshold = (odds[len(odds) // 2 - 1] + odds[len(odds) // 2]) / 2
    return threshold, postprocess_predictions(
        examples, features, logits["start_logits"], logits["end_logits"],
        max_answer_length=MAX_ANSWER_LENGTH, version_2_with_negative=version_2,
        null_score_diff_threshold=threshold)


def _module(setup, version_2, threshold):
    tokenizer, model = setup[:2]
    return SquadServingModule(
        model, tokenizer, max_answer_length=MAX_ANSWER_LENGTH,
        version_2_with_negative=version_2,
        null_score_diff_threshold=threshold, **SETTINGS)


def _assert_same_answers(served, expected, examples, version_2):
    answered = 0
    for i, example in enumerate(examples):
        best = expected.best_spans[example.qas_id]
        text = expected.predictions[example.qas_id]
        assert served["answer_text"][i] == text, example.qas_id
        assert served["score"][i] == pytest.approx(best["score"], abs=1e-4)
        if text:
            answered += 1
            assert served["start_char"][i] == best["start_char"]
            assert served["end_char"][i] == best["end_char"]
            assert example.context[best["start_char"]:best["end_char"]] == text
        else:
            assert served["start_char"][i] == served["end_char"][i] == -1
        if version_2:
            odds = expected.null_odds[example.qas_id]
            assert served["no_answer_probability"][i] == pytest.approx(
                1 / (1 + np.exp(-min(odds, 50))), abs=1e-4)
    assert expected.predictions["empty"] == ""
    if version_2:
        assert 0 < answered < len(examples) - 1
    else:
        assert answered == len(examples) - 1
        assert "no_answer_probability" not in served


@pytest.mark.slow
def test_v1_module_matches_python(setup):
    examples = setup[2]
    threshold, expected = _expected(setup, version_2=False)
    module = _module(setup, False, threshold)
    out = module.signatures(limits=WHOLE_DEV_SET)["serving_default"](
        question=tf.constant([e.question for e in examples]),
        context=tf.constant([e.context for e in examples]))
    served = {k: v.numpy().tolist() for k, v in out.items()}
    served["answer_text"] = [t.decode() for t in served["answer_text"]]
    _assert_same_answers(served, expected, examples, version_2=False)


@pytest.mark.slow
def test_exported_v2_model_matches_python_in_a_fresh_process(setup, tmp_path,
                                                             run_fresh_python):
    examples, features, logits = setup[2:]
    threshold, expected = _expected(setup, version_2=True)
    module = _module(setup, True, threshold)
    path = export_saved_model(module, str(tmp_path / "squad"),
                              limits=WHOLE_DEV_SET)
    assert path.endswith("/1")
    assert unservable_ops(path) == []

    inputs = {"question": [e.question for e in examples],
              "context": [e.context for e in examples],
              "ids": {k: v[:4].tolist()
                      for k, v in features.model_inputs().items()}}
    (tmp_path / "inputs.json").write_text(json.dumps(inputs))
    served = run_fresh_python(_SERVE, path, tmp_path / "inputs.json")
    _assert_same_answers(served, expected, examples, version_2=True)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_allclose(served[name], logits[name][:4], atol=1e-4)
    cli = served["saved_model_cli"]
    assert cli["returncode"] == 0, cli["stderr"][-2000:]
    for name in ("serving_default", "serve_token_ids", "question", "context",
                 "answer_text", "no_answer_probability", "start_logits",
                 "input_word_ids"):
        assert name in cli["stdout"]


@pytest.mark.parametrize("version_2", [False, True])
@pytest.mark.slow
def test_contexts_without_tokens_have_no_answer(setup, version_2):
    serve = _module(setup, version_2, 0.0).signatures()["serving_default"]
    for contexts in ([], [""], ["   \t\n"], ["\u200b\u200b"],
                     ["\u200b", "The tower is in Paris.", ""]):
        served = serve(question=tf.constant(["Where?"] * len(contexts),
                                            tf.string),
                       context=tf.constant(contexts, tf.string))
        assert {k: v.shape.as_list() for k, v in served.items()} == {
            k: [len(contexts)] for k in served}
        for i, context in enumerate(contexts):
            if not context.strip("\u200b \t\n"):
                assert served["answer_text"][i] == b""
                assert served["start_char"][i] == served["end_char"][i] == -1
    assert served["answer_text"][1] != b"" or version_2  # a real context
