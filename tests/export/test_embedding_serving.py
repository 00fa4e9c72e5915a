"""The SavedModel of a `SentenceEncoder`, loaded in a process with only
tensorflow and tensorflow_text: embeddings equal `encode()` and
sentence-transformers' on the real all-MiniLM-L6-v2."""

import json

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from tfbert.export import export_saved_model
from tfbert.export.embedding_serving import EmbeddingServingModule
from tfbert.models import SentenceEncoder
from tfbert.text import BertPreprocessor

SERVE = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
loaded = tf.saved_model.load(sys.argv[1])
request = json.loads(sys.stdin.read())
text = loaded.signatures["serving_default"](
    text=tf.constant(request["texts"]))
ids = loaded.signatures["serve_token_ids"](**{
    name: tf.constant(value, tf.int32)
    for name, value in request["ids"].items()})
print(json.dumps({"modules": sorted(m for m in sys.modules
                                    if m.split(".")[0] == "tfbert"),
                  "signatures": sorted(loaded.signatures),
                  "text": text["embedding"].numpy().tolist(),
                  "ids": ids["embedding"].numpy().tolist()}))
"""


def _cosines(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


@pytest.mark.slow
def test_minilm_export_matches_encode_and_sentence_transformers(
        minilm_dir, shared_data_dir, tmp_path, run_fresh_python):
    lines = (shared_data_dir / "glue" / "SST-2" / "dev.tsv").read_text(
        encoding="utf-8").splitlines()[1:41]
    texts = [line.split("\t")[0] for line in lines]
    model = SentenceEncoder.from_pretrained("minilm-l6-h384-uncased")
    path = export_saved_model(EmbeddingServingModule(model),
                              str(tmp_path / "minilm"))
    assert path.endswith("/1")
    packed = BertPreprocessor(model.preprocessor.tokenizer,
                              seq_length=model.preprocessor.seq_length)(texts)
    served = run_fresh_python(SERVE, path, stdin=json.dumps({
        "texts": texts,
        "ids": {name: value.numpy().tolist()
                for name, value in packed.items()}}))
    assert served["modules"] == []
    assert served["signatures"] == ["serve_token_ids", "serving_default"]
    encoded = model.encode(texts)
    reference = SentenceTransformer(str(minilm_dir), device="cpu").encode(
        texts)
    for key in ("text", "ids"):
        embeddings = np.asarray(served[key], np.float32)
        assert embeddings.shape == (40, 384)
        np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0,
                                   atol=1e-5)
        assert _cosines(embeddings, encoded).min() >= 0.99999
        assert _cosines(embeddings, reference).min() >= 0.99999
