"""benchmarks/serving.py: the HF / ONNX conversion reads back exactly the
weights an export holds."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from benchmarks.serving import _export_weights
from tfbert import BertConfig, BertEncoder, BertPreprocessor, BertTokenizer
from tfbert.export import export_saved_model
from tfbert.export.classifier_serving import ClassifierServingModule
from tfbert.models import BertClassifier


def _classifier(vocab_size, seed):
    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(BertConfig(
        vocab_size=vocab_size, hidden_size=16, num_layers=2, num_heads=2,
        intermediate_size=32, max_position_embeddings=64))
    return BertClassifier(encoder, 2)


@pytest.mark.parametrize("shards", [1, 2, 3])
def test_export_weights_are_the_exported_models(shards, tmp_path, minilm_dir):
    """Whole or as feed-forward shards in the export, the values come back
    in `model.variables` order, equal to the exported model's."""
    tokenizer = BertTokenizer(str(minilm_dir / "vocab.txt"))
    exported = _classifier(tokenizer.vocab_size, seed=0)
    module = ClassifierServingModule(
        exported, BertPreprocessor(tokenizer, seq_length=16),
        ["negative", "positive"], ("sentence",))
    path = export_saved_model(module, str(tmp_path / "export"),
                              feed_forward_shards=shards)
    reader = tf.train.load_checkpoint(f"{path}/variables/variables")
    fresh = _classifier(tokenizer.vocab_size, seed=1)
    values = _export_weights(fresh, reader)
    assert len(values) == len(exported.variables)
    for variable, value in zip(exported.variables, values):
        np.testing.assert_array_equal(
            value, keras.ops.convert_to_numpy(variable), err_msg=variable.path)
