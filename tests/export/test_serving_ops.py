"""The serving-op check refuses graphs a TF Serving 2.10+ binary cannot run."""

import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from tfbert.export import check_serving_ops, unservable_ops


def _save(tmp_path, fn):
    module = tf.Module()
    module.fn = tf.function(fn, input_signature=[
        tf.TensorSpec([None], tf.string)])
    path = str(tmp_path)
    tf.saved_model.save(module, path,
                        signatures=module.fn.get_concrete_function())
    return path


def test_an_op_newer_than_the_oldest_server_is_refused_by_name(tmp_path):
    normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=True)
    path = _save(tmp_path, normalizer.normalize)
    assert unservable_ops(path) == ["FastBertNormalize"]
    with pytest.raises(ValueError, match="does not link: FastBertNormalize"):
        check_serving_ops(path)


def test_core_and_classic_tokenizer_ops_pass(tmp_path):
    path = _save(tmp_path, lambda text: tf_text.regex_split(
        tf.strings.lower(text), r"\s"))
    assert unservable_ops(path) == []
    check_serving_ops(path)
