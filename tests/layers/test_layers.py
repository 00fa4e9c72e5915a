"""Each layer against a direct numpy transcription of BERT's equations."""

import math

import numpy as np
import pytest

from tfbert.layers import (
    BertEmbeddings, ClassificationHead, MaskedLMHead, MultiHeadSelfAttention,
    NextSentenceHead, Pooler, SpanLabelingHead, TokenClassificationHead,
    TransformerBlock, get_activation)

RNG = np.random.default_rng(0)


def _randomize(layer):
    for variable in layer.weights:
        variable.assign(RNG.normal(0, 0.3, variable.shape).astype("float32"))
    return layer


def _layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _gelu_erf(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _attention_reference(x, mask, layer):
    heads, size = layer.num_heads, x.shape[-1] // layer.num_heads

    def project(dense):
        y = x @ dense.kernel.numpy() + dense.bias.numpy()
        return y.reshape(*x.shape[:2], heads, size).transpose(0, 2, 1, 3)

    q, k, v = project(layer.query), project(layer.key), project(layer.value)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size)
    scores = np.where(mask[:, None, None, :] == 1, scores, -np.inf)
    context = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(x.shape)
    dense = layer.output_dense
    return context @ dense.kernel.numpy() + dense.bias.numpy()


def test_activations():
    x = np.linspace(-5, 5, 101).astype(np.float32)
    np.testing.assert_allclose(get_activation("gelu")(x), _gelu_erf(x),
                               atol=1e-6)
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi)
                                  * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(get_activation("gelu_approximate")(x), tanh,
                               atol=1e-6)
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        get_activation("swish")


def test_embeddings():
    layer = BertEmbeddings(vocab_size=11, hidden_size=8,
                           max_position_embeddings=6, type_vocab_size=2)
    layer.build()
    _randomize(layer)
    ids = np.array([[1, 5, 10, 0]], np.int32)
    types = np.array([[0, 0, 1, 1]], np.int32)
    expected = _layer_norm(
        layer.word_embeddings.numpy()[ids]
        + layer.token_type_embeddings.numpy()[types]
        + layer.position_embeddings.numpy()[None, :4],
        layer.layer_norm.gamma.numpy(), layer.layer_norm.beta.numpy())
    np.testing.assert_allclose(layer(ids, types), expected, atol=1e-5)


def test_attention_with_key_padding_mask():
    layer = MultiHeadSelfAttention(num_heads=2, dropout=0.0)
    layer.build((None, None, 8))
    _randomize(layer)
    x = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    np.testing.assert_allclose(layer(x, mask), _attention_reference(x, mask, layer),
                               atol=1e-5)


def _block_reference(x, mask, block):
    ln1, ln2 = block.attention_layer_norm, block.output_layer_norm
    x1 = _layer_norm(x + _attention_reference(x, mask, block.attention),
                     ln1.gamma.numpy(), ln1.beta.numpy())
    inner = _gelu_erf(x1 @ block.intermediate_dense.kernel.numpy()
                      + block.intermediate_dense.bias.numpy())
    outer = inner @ block.output_dense.kernel.numpy() + block.output_dense.bias.numpy()
    return _layer_norm(x1 + outer, ln2.gamma.numpy(), ln2.beta.numpy())


def _tiny_block():
    block = TransformerBlock(num_heads=2, intermediate_size=16,
                             hidden_dropout=0.0, attention_dropout=0.0)
    block.build((None, None, 8))
    return _randomize(block)


def test_transformer_block_is_post_layer_norm():
    block = _tiny_block()
    x = RNG.normal(size=(2, 4, 8)).astype(np.float32)
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], np.int32)
    np.testing.assert_allclose(block(x, mask), _block_reference(x, mask, block),
                               atol=1e-4)


def test_pooler_uses_the_first_position():
    x = RNG.normal(size=(2, 3, 8)).astype(np.float32)
    for activation, reference in (("tanh", np.tanh),
                                  ("relu", lambda y: np.maximum(y, 0)),
                                  ("gelu", _gelu_erf)):
        layer = Pooler(activation=activation)
        layer.build((None, None, 8))
        _randomize(layer)
        expected = reference(x[:, 0] @ layer.dense.kernel.numpy()
                             + layer.dense.bias.numpy())
        np.testing.assert_allclose(layer(x), expected, atol=1e-6)
        assert Pooler.from_config(layer.get_config()).activation == activation


def test_masked_lm_head_gathers_then_decodes_with_the_table():
    layer = MaskedLMHead(vocab_size=13)
    layer.build((None, None, 8))
    _randomize(layer)
    x = RNG.normal(size=(2, 6, 8)).astype(np.float32)
    table = RNG.normal(size=(13, 8)).astype(np.float32)
    positions = np.array([[0, 5, 2], [1, 1, 4]], np.int32)
    gathered = np.take_along_axis(x, positions[..., None], axis=1)
    hidden = _gelu_erf(gathered @ layer.transform.kernel.numpy()
                       + layer.transform.bias.numpy())
    hidden = _layer_norm(hidden, layer.layer_norm.gamma.numpy(),
                         layer.layer_norm.beta.numpy())
    expected = hidden @ table.T + layer.output_bias.numpy()
    np.testing.assert_allclose(layer(x, positions, table), expected, atol=1e-4)
    # The head owns no [vocab, H] matrix: the decoder is the table passed in.
    assert all(tuple(w.shape) != (13, 8) for w in layer.weights)


def test_heads_shapes_dropout_and_masking():
    pooled = RNG.normal(size=(4, 8)).astype(np.float32)
    sequence = RNG.normal(size=(4, 5, 8)).astype(np.float32)
    regression = ClassificationHead(1, dropout=0.5)
    assert regression(pooled).shape == (4, 1)
    # Dropout only in training.
    np.testing.assert_array_equal(regression(pooled), regression(pooled))
    assert not np.allclose(regression(pooled, training=True), regression(pooled))
    assert TokenClassificationHead(7)(sequence).shape == (4, 5, 7)
    assert NextSentenceHead()(pooled).shape == (4, 2)
    mask = np.array([[1, 1, 1, 0, 0]] * 4, np.int32)
    start, end = SpanLabelingHead()(sequence, mask)
    assert start.shape == end.shape == (4, 5)
    assert np.asarray(end)[:, 3:].max() <= -1e8
    assert np.asarray(end)[:, :3].min() > -1e3
