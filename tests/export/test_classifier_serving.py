"""The classifier/regressor export against the Keras model it wraps."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

SENTENCES = ["A gripping, beautifully shot film.", "Dull.", "It was fine"]


@pytest.fixture(scope="module")
def loaded(exports):
    return {kind: tf.saved_model.load(exports[kind])
            for kind in ("classifier", "regressor")}


@pytest.mark.slow
def test_regression_export_serves_the_model_score(loaded, serving_modules):
    module = serving_modules["regressor"]
    features = module._untracked.preprocessor(tf.constant(SENTENCES))
    expected = module.model(features)[:, 0]
    served = loaded["regressor"].signatures["serving_default"](
        sentence=tf.constant(SENTENCES))
    assert sorted(served) == ["score"]
    np.testing.assert_allclose(served["score"], expected, atol=1e-5)
    by_ids = loaded["regressor"].signatures["serve_token_ids"](**features)
    np.testing.assert_allclose(by_ids["score"], expected, atol=1e-5)
    np.testing.assert_allclose(by_ids["logits"][:, 0], expected, atol=1e-5)


def test_pair_classifier_labels_follow_the_logits(loaded, serving_modules):
    module = serving_modules["classifier"]
    pairs = (tf.constant(SENTENCES), tf.constant(SENTENCES[::-1]))
    logits = module.model(module._untracked.preprocessor(pairs)).numpy()
    served = loaded["classifier"].signatures["serving_default"](
        sentence1=pairs[0], sentence2=pairs[1])
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(served["probabilities"], probabilities,
                               atol=1e-5)
    assert [label.decode() for label in served["label"].numpy()] == [
        ["negative", "positive"][i] for i in logits.argmax(-1)]


@pytest.mark.parametrize("kind, inputs, outputs", [
    ("classifier", ("sentence1", "sentence2"),
     {"probabilities": (0, 2), "label": (0,)}),
    ("regressor", ("sentence",), {"score": (0,)})])
def test_a_batch_of_zero_texts_gives_empty_outputs(kind, inputs, outputs,
                                                   loaded):
    served = loaded[kind].signatures["serving_default"](
        **{name: tf.constant([], tf.string) for name in inputs})
    assert {name: tuple(value.shape) for name, value in served.items()} == (
        outputs)
