"""`FeatureExtractor` against HF `output_hidden_states` on the real
all-MiniLM-L6-v2 and real sentences, and on another family's checkpoint."""

import json

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from tfbert.export import export_for_serving
from tfbert.export.feature_serving import FeatureServingModule
from tfbert.feature_extractor import FeatureExtractor

LAYERS = (-1, -2, -3, -4)


@pytest.fixture(scope="module")
def texts(shared_data_dir):
    """Real SST-2 dev sentences and MRPC-style pairs of them."""
    with open(shared_data_dir / "glue" / "SST-2" / "dev.tsv",
              encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    return sentences[:6] + [(sentences[6], sentences[7]),
                            (sentences[8], sentences[9])] + sentences[10:12]


def _hf_blocks(directory, texts, max_length=128):
    """HF's tokens and block outputs ([blocks, tokens, H], `hidden_states`
    without the embeddings) of each text."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    model = transformers.AutoModel.from_pretrained(directory).eval()
    results = []
    for text in texts:
        pair = text if isinstance(text, tuple) else (text,)
        encoding = tokenizer(*pair, truncation=True, max_length=max_length,
                             return_tensors="pt")
        with torch.no_grad():
            hidden = model(**encoding, output_hidden_states=True).hidden_states
        results.append((tokenizer.convert_ids_to_tokens(
            encoding["input_ids"][0]),
            np.stack([h[0].numpy() for h in hidden[1:]])))
    return results


def _at(blocks, layers):
    """[tokens, len(layers), H] of [blocks, tokens, H]."""
    return np.stack([blocks[i] for i in layers], axis=1)


@pytest.fixture(scope="module")
def hf_minilm(minilm_dir, texts):
    return _hf_blocks(minilm_dir, texts)


@pytest.fixture(scope="module")
def minilm_extractor():
    return FeatureExtractor.from_pretrained("minilm-l6-h384-uncased",
                                            layers=LAYERS)


def test_token_features_equal_hf_hidden_states(minilm_extractor, hf_minilm,
                                               texts):
    got = minilm_extractor.token_features(texts, batch_size=4)
    assert len(got) == len(texts)
    for (tokens, values), (hf_tokens, blocks) in zip(got, hf_minilm):
        assert tokens == hf_tokens
        assert values.shape == (len(tokens), 4, 384)
        np.testing.assert_allclose(values, _at(blocks, LAYERS), atol=1e-4)


@pytest.mark.parametrize("pooling, combination", [
    ("mean", "concat"), ("cls", "sum"), ("mean", "mean")])
def test_pooled_features_are_hf_layers_pooled_and_combined(
        minilm_extractor, hf_minilm, texts, pooling, combination, tmp_path):
    extractor = FeatureExtractor(
        minilm_extractor.encoder, minilm_extractor.preprocessor,
        layers=(-1, 2), pooling=pooling, layer_combination=combination)
    expected = []
    for _, blocks in hf_minilm:
        values = _at(blocks, (-1, 2))
        pooled = values[0] if pooling == "cls" else values.mean(axis=0)
        expected.append({"concat": pooled.reshape(-1),
                         "sum": pooled.sum(axis=0),
                         "mean": pooled.mean(axis=0)}[combination])
    # Written into a memory-mapped .npy, as the program does.
    out = np.lib.format.open_memmap(
        tmp_path / "features.npy", mode="w+", dtype=np.float32,
        shape=(len(texts), extractor.feature_size))
    got = extractor.pooled_features(texts, batch_size=3, out=out)
    assert got is out and got.dtype == np.float32
    assert got.shape == (len(texts), 768 if combination == "concat" else 384)
    np.testing.assert_allclose(got, np.stack(expected), atol=1e-4)


def test_roberta_family_features_equal_hf(zoo_checkpoints, texts):
    directory = zoo_checkpoints["roberta"]
    extractor = FeatureExtractor.from_pretrained(directory, layers=(0, -1))
    expected = _hf_blocks(directory, texts[5:8])
    for (tokens, values), (hf_tokens, blocks) in zip(
            extractor.token_features(texts[5:8]), expected):
        assert tokens == hf_tokens
        np.testing.assert_allclose(values, _at(blocks, (0, -1)), atol=1e-4)


@pytest.mark.parametrize("layers, message", [
    ((), "empty"), ((-7,), "outside [-6, 5]"), ((6,), "outside [-6, 5]"),
    ((-1, 5), "twice"), ((1.5,), "not an integer")])
def test_bad_layers(minilm_extractor, layers, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        FeatureExtractor(minilm_extractor.encoder,
                         minilm_extractor.preprocessor, layers=layers)


SERVE_FEATURES = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
out = tf.saved_model.load(sys.argv[1]).signatures["serving_default"](
    text=tf.constant(json.loads(sys.argv[2])))
print(json.dumps(out["features"].numpy().tolist()))
"""


@pytest.mark.slow
def test_export_serves_the_pooled_features(tiny_checkpoint, tmp_path, texts,
                                           run_fresh_python):
    from tests.export.conftest import replay_warmup
    from tfbert.export import check_serving_ops

    extractor = FeatureExtractor.from_pretrained(
        tiny_checkpoint, seq_length=32, layers=(-1, 0), pooling="mean",
        layer_combination="concat")
    sentences = [t for t in texts if isinstance(t, str)][:4]
    path = export_for_serving(extractor, str(tmp_path / "export"))
    served = run_fresh_python(SERVE_FEATURES, path, json.dumps(sentences))
    np.testing.assert_allclose(served, extractor.pooled_features(sentences),
                               atol=1e-5)
    check_serving_ops(path)
    assert sorted(replay_warmup(path, tf.saved_model.load(path).signatures)
                  ) == ["serve_token_ids", "serving_default"]


def test_an_export_reading_replaced_kernels_is_refused(tiny_checkpoint):
    """A signature that runs `tfbert.inference` without the module's
    feed-forward shards would read kernels the export does not save (and
    fail when loaded): `signatures` refuses it, naming the fix."""
    extractor = FeatureExtractor.from_pretrained(tiny_checkpoint,
                                                 seq_length=16, layers=(-1,))

    class Forgetful(FeatureServingModule):
        def token_id_outputs(self, features):
            return {"features": self._untracked.extractor.pooled(features)}

    with pytest.raises(ValueError, match="intermediate.*feed_forward_shards"):
        Forgetful(extractor).signatures(token_ids_only=True)
    assert FeatureServingModule(extractor).signatures(token_ids_only=True)
