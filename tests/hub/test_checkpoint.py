"""Reading TF Hub BERT encoders written by TF Model Garden's own exporter
(`official/nlp/tools/export_tfhub_lib`): outputs, masked-LM logits and
tokenization against Model Garden's SavedModels, and the strict checks."""

import unicodedata

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers Model Garden's preprocessor ops)

from tfbert import BertEncoder, BertPreprocessor, BertTokenizer
from tfbert.checkpoints import load_pretrainer, read_checkpoint

TOLERANCE = 1e-5

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def preprocess(model_garden_hub):
    return tf.saved_model.load(str(model_garden_hub["preprocess"]))


@pytest.fixture(scope="module")
def inputs(preprocess, mrpc_pairs):
    """Model Garden's packing of real MRPC pairs (seq_length 64)."""
    first, second = (preprocess.tokenize(tf.constant(texts[:24]))
                     for texts in mrpc_pairs)
    return preprocess.bert_pack_inputs([first, second])


@pytest.mark.parametrize("name", ["encoder", "encoder_mlm"])
def test_encoder_outputs_equal_model_garden(model_garden_hub, inputs, name):
    directory = model_garden_hub[name]
    expected = tf.saved_model.load(str(directory))(inputs, training=False)
    got = BertEncoder.from_pretrained(directory)(inputs)
    mask = inputs["input_mask"].numpy().astype(bool)
    np.testing.assert_allclose(got["sequence_output"].numpy()[mask],
                               expected["sequence_output"].numpy()[mask],
                               atol=TOLERANCE)
    np.testing.assert_allclose(got["pooled_output"], expected["pooled_output"],
                               atol=TOLERANCE)
    for ours, theirs in zip(got["encoder_outputs"],
                            expected["encoder_outputs"], strict=True):
        np.testing.assert_allclose(ours.numpy()[mask], theirs.numpy()[mask],
                                   atol=TOLERANCE)


def test_mlm_logits_equal_model_garden(model_garden_hub, inputs):
    directory = model_garden_hub["encoder_mlm"]
    positions = tf.constant(np.random.default_rng(0).integers(
        1, 20, size=(24, 5)), tf.int32)
    mlm_inputs = dict(inputs, masked_lm_positions=positions)
    expected = tf.saved_model.load(str(directory)).mlm(mlm_inputs)
    got = load_pretrainer(directory)(mlm_inputs)["masked_lm_logits"]
    np.testing.assert_allclose(got, expected["mlm_logits"], atol=TOLERANCE)


def test_config_and_tokenizer_from_the_saved_model(model_garden_hub, minilm_dir):
    checkpoint = read_checkpoint(model_garden_hub["encoder"])
    assert checkpoint.format == "tf_hub"
    config = checkpoint.config
    # The producer's BertConfig (tests/hub/model_garden_producer.py).
    assert (config.hidden_size, config.num_layers, config.num_heads,
            config.intermediate_size, config.max_position_embeddings,
            config.hidden_act) == (32, 2, 2, 64, 64, "gelu_approximate")
    tokenizer = BertTokenizer.from_pretrained(model_garden_hub["encoder"])
    assert tokenizer.lowercase
    assert tokenizer.vocabulary == BertTokenizer(
        str(minilm_dir / "vocab.txt")).vocabulary


def test_token_ids_equal_model_garden_preprocessor(
        model_garden_hub, preprocess, sst2_sentences, mrpc_pairs, minilm_dir):
    """Equal on every text that NFKC leaves alone. Model Garden's tf-text
    tokenizer folds compatibility characters (MRPC has "µGuru": µ -> μ),
    which BERT does not: there tfbert must agree with HF instead."""
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertTokenizer.from_pretrained(model_garden_hub["encoder"])
    texts = sst2_sentences + mrpc_pairs[0] + mrpc_pairs[1]
    plain = [t for t in texts if unicodedata.normalize("NFKC", t) == t]
    folded = [t for t in texts if t not in plain]
    assert len(plain) > 1500 and folded
    expected = preprocess(tf.constant(plain))
    got = BertPreprocessor(tokenizer, seq_length=64)(tf.constant(plain))
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    hf = BertWordPieceTokenizer(str(minilm_dir / "vocab.txt"), lowercase=True)
    assert tokenizer.tokenize(tf.constant(folded)).to_list() == [
        e.ids for e in hf.encode_batch(folded, add_special_tokens=False)]


def _save_reusable(directory, variables):
    root = tf.train.Checkpoint()
    root.variables = [tf.Variable(value, name=name)
                      for name, value in variables.items()]
    tf.saved_model.save(root, str(directory))


@pytest.fixture(scope="module")
def model_garden_values(model_garden_hub):
    loaded = tf.saved_model.load(str(model_garden_hub["encoder"]))
    return {v.name.split(":")[0]: v.numpy() for v in loaded.variables
            if v.dtype.is_floating}


@pytest.mark.parametrize("change, message", [
    ({"transformer/layer_0/mystery/kernel": np.zeros((4, 4), np.float32)},
     "does not know: transformer/layer_0/mystery/kernel"),
    ({"embedding_projection/kernel": np.zeros((4, 8), np.float32)},
     "does not know: embedding_projection/kernel"),
    ({"pooler_transform/kernel": None},
     "no value in the checkpoint: bert/pooler/dense/kernel"),
    ({"transformer/layer_1/intermediate/kernel": np.zeros((32, 65),
                                                          np.float32)},
     r"layer_1/intermediate/dense/kernel: checkpoint \(32, 65\)"),
    ({"transformer/layer_0/self_attention/key/kernel": np.zeros((32,),
                                                               np.float32)},
     r"self_attention/key/kernel has shape \(32,\); expected \[hidden"),
])
def test_mismatches_are_named(model_garden_values, tmp_path, change, message):
    variables = {name: value for name, value in
                 dict(model_garden_values, **change).items()
                 if value is not None}
    _save_reusable(tmp_path / "model", variables)
    with pytest.raises(ValueError, match=message):
        BertEncoder.from_pretrained(tmp_path / "model")


def test_not_a_reusable_saved_model(tmp_path):
    module = tf.Module()
    module.table = tf.Variable([1.0])
    tf.saved_model.save(module, str(tmp_path / "model"))
    with pytest.raises(ValueError, match="no `variables` list"):
        BertEncoder.from_pretrained(tmp_path / "model")


def test_from_pretrained_resolves_a_hub_handle(model_garden_hub, tmp_path,
                                               monkeypatch, inputs):
    """A handle URL goes through tensorflow_hub's own resolver: here a
    local HTTP server serving the SavedModel as a .tar.gz, the way tfhub.dev
    and Kaggle serve compressed models."""
    import functools
    import http.server
    import tarfile
    import threading

    directory = model_garden_hub["encoder"]
    with tarfile.open(tmp_path / "encoder.tar.gz", "w:gz") as archive:
        for path in sorted(directory.rglob("*")):
            archive.add(path, arcname=str(path.relative_to(directory)),
                        recursive=False)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(
            http.server.SimpleHTTPRequestHandler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("TFHUB_CACHE_DIR", str(tmp_path / "cache"))
    handle = f"http://127.0.0.1:{server.server_address[1]}/encoder.tar.gz"
    try:
        encoder = BertEncoder.from_pretrained(handle)
        tokenizer = BertTokenizer.from_pretrained(handle)
    finally:
        server.shutdown()
    np.testing.assert_array_equal(
        encoder(inputs)["pooled_output"],
        BertEncoder.from_pretrained(directory)(inputs)["pooled_output"])
    assert tokenizer.lowercase and tokenizer.vocab_size == 30522
    assert (tmp_path / "cache").is_dir()
