"""The classifier/regressor export against the Keras model it wraps."""

import os

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


def _request_examples(request_class, texts_by_feature):
    """A tensorflow-serving-api Classification/RegressionRequest carrying
    the texts as tf.Examples, and its examples serialized, as TF Serving
    feeds them to the signature's `inputs`."""
    from tensorflow_serving.apis import classification_pb2, regression_pb2

    module = {"classification": classification_pb2,
              "regression": regression_pb2}[request_class]
    request = getattr(module, f"{request_class.title()}Request")()
    request.model_spec.signature_name = (
        "classify" if request_class == "classification" else "regress")
    for row in zip(*texts_by_feature.values()):
        example = request.input.example_list.examples.add()
        for name, text in zip(texts_by_feature, row):
            example.features.feature[name].bytes_list.value.append(
                text.encode())
    serialized = [e.SerializeToString()
                  for e in request.input.example_list.examples]
    return request, tf.constant(serialized)


def test_classify_and_regress_signatures_serve_tf_examples(loaded, exports):
    from tensorflow.core.protobuf import saved_model_pb2

    pairs = {"sentence1": SENTENCES, "sentence2": SENTENCES[::-1]}
    request, inputs = _request_examples("classification", pairs)
    classify = loaded["classifier"].signatures[
        request.model_spec.signature_name]
    served = classify(inputs=inputs)
    expected = loaded["classifier"].signatures["serving_default"](
        **{name: tf.constant(texts) for name, texts in pairs.items()})
    np.testing.assert_allclose(served["scores"], expected["probabilities"],
                               atol=1e-6)
    assert served["classes"].numpy().tolist() == [[b"negative",
                                                   b"positive"]] * 3
    request, inputs = _request_examples("regression",
                                        {"sentence": SENTENCES})
    regress = loaded["regressor"].signatures[request.model_spec.signature_name]
    np.testing.assert_allclose(
        regress(inputs=inputs)["outputs"],
        loaded["regressor"].signatures["serving_default"](
            sentence=tf.constant(SENTENCES))["score"], atol=1e-6)
    # TF Serving's Classify/Regress APIs serve only these method names.
    for kind, name, method in (("classifier", "classify", "classify"),
                               ("regressor", "regress", "regress")):
        saved = saved_model_pb2.SavedModel.FromString(
            open(f"{exports[kind]}/saved_model.pb", "rb").read())
        signature = saved.meta_graphs[0].signature_def[name]
        assert signature.method_name == f"tensorflow/serving/{method}"
        assert sorted(signature.inputs) == ["inputs"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="sentence2"):
        classify(inputs=_request_examples(
            "classification", {"sentence1": SENTENCES})[1])


def test_labels_asset_lists_the_probability_columns(exports):
    assets = f"{exports['classifier']}/assets"
    with open(f"{assets}/labels.txt", encoding="utf-8") as f:
        assert f.read() == "negative\npositive\n"
    assert not os.path.exists(f"{exports['regressor']}/assets/labels.txt")

