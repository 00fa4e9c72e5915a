"""The TF Hub text-embedding export of a `SentenceEncoder` on the real
all-MiniLM-L6-v2: `hub.KerasLayer` over strings (tf_keras, in a process
without tfbert) gives `encode()`'s embeddings, and fine-tunes."""

import numpy as np
import pytest

from tfbert.hub import export_text_embedding
from tfbert.models import SentenceEncoder

# Reads the tf_keras answers of a process that loads the MiniLM export.
_HUB_CHECK = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tensorflow_text  # noqa: F401  (the tokenizer's ops)
import tf_keras

texts = json.loads(sys.argv[2])
encoder = hub.KerasLayer(sys.argv[1], trainable=True)
inference = encoder(tf.constant(texts)).numpy()

# A siamese fine-tuning step: cosine of the two embeddings vs a score.
a = tf_keras.Input(shape=(), dtype=tf.string)
b = tf_keras.Input(shape=(), dtype=tf.string)
cosine = tf_keras.layers.Dot(axes=1, normalize=True)([encoder(a), encoder(b)])
model = tf_keras.Model([a, b], cosine)
model.compile(tf_keras.optimizers.Adam(1e-3), "mse")
before = [w.numpy() for w in encoder.trainable_weights]
model.fit([tf.constant(texts[:4]), tf.constant(texts[4:8])],
          tf.constant([0.9, 0.1, 0.5, 0.0]), batch_size=4, epochs=1, verbose=0)
unchanged = [i for i, (old, new) in enumerate(
    zip(before, encoder.trainable_weights)) if np.array_equal(old, new.numpy())]
print(json.dumps({
    "tfbert_modules": sorted(m for m in sys.modules
                             if m.split(".")[0] == "tfbert"),
    "embeddings": inference.tolist(),
    "trainable": len(encoder.trainable_weights), "unchanged": unchanged}))
"""


@pytest.mark.slow
def test_minilm_text_embedding_equals_encode_and_fine_tunes(
        tmp_path, sst2_sentences, run_tf_keras):
    import json

    texts = sst2_sentences[:16]
    model = SentenceEncoder.from_pretrained("minilm-l6-h384-uncased")
    path = export_text_embedding(model, tmp_path / "minilm")
    result = run_tf_keras(_HUB_CHECK, path, json.dumps(texts))
    assert result["tfbert_modules"] == []
    embeddings = np.asarray(result["embeddings"], np.float32)
    expected = model.encode(texts)
    assert embeddings.shape == expected.shape == (16, 384)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0,
                               atol=1e-5)
    cosines = (embeddings * expected).sum(axis=1) / np.linalg.norm(
        expected, axis=1)
    assert cosines.min() >= 0.99999
    # One step moves every weight the embedding uses (all but the encoder's
    # tanh pooler: mean pooling reads the token vectors).
    trainable = [v.path for v in model.variables if v.trainable]
    assert result["trainable"] == len(trainable) > 0
    unchanged = [trainable[i] for i in result["unchanged"]]
    assert len(unchanged) == 2
    assert all("pooler" in path for path in unchanged), unchanged
