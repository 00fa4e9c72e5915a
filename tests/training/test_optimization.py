"""BERT's optimizer: which variables decay, the schedule, layer-wise decay."""

import keras
import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder
from tfbert.models import BertClassifier
from tfbert.training import AdamW, WarmupLinearDecay, create_optimizer


def _tiny_classifier():
    return BertClassifier(BertEncoder(BertConfig(
        vocab_size=50, hidden_size=16, num_layers=2, num_heads=2,
        intermediate_size=32)), num_classes=2)


def test_weight_decay_skips_layer_norm_and_biases():
    """With zero gradients, AdamW changes a variable only through weight
    decay: exactly the kernels and embedding tables must move."""
    model = _tiny_classifier()
    optimizer = create_optimizer(1e-2, total_steps=10, warmup_steps=0,
                                 weight_decay=0.5, clip_norm=None)
    variables = model.trainable_variables
    before = [np.array(v.numpy()) for v in variables]
    optimizer.apply_gradients([(np.zeros(v.shape, "float32"), v)
                               for v in variables])
    decayed = {v.path for v, old in zip(variables, before)
               if not np.allclose(v.numpy(), old)}
    expected = {v.path for v in variables
                if v.name not in ("gamma", "beta", "bias")}
    assert decayed == expected
    assert any("word_embeddings" in p for p in decayed)
    assert not any(p.endswith(("gamma", "beta", "bias")) for p in decayed)


def test_warmup_then_linear_decay():
    schedule = WarmupLinearDecay(1e-4, total_steps=100, warmup_steps=10)
    rates = [float(schedule(step)) for step in (0, 5, 10, 55, 100, 120)]
    np.testing.assert_allclose(rates, [0, 5e-5, 1e-4, 5e-5, 0, 0], atol=1e-12)


def test_layerwise_decay_scales_updates_by_depth():
    model = _tiny_classifier()
    optimizer = create_optimizer(1e-3, total_steps=10, warmup_steps=0,
                                 weight_decay=0.0, clip_norm=None,
                                 layerwise_decay=0.5, num_layers=2)
    by_path = {v.path: v for v in model.trainable_variables}
    multiplier = {path: optimizer.learning_rate_multiplier(v)
                  for path, v in by_path.items()}
    head = [p for p in multiplier if "classification_head" in p]
    top = [p for p in multiplier if "transformer_block_1/" in p]
    bottom = [p for p in multiplier if "transformer_block_0/" in p]
    embeddings = [p for p in multiplier if p.startswith("embeddings/")]
    assert head and top and bottom and embeddings
    assert {multiplier[p] for p in head} == {1.0}
    assert {multiplier[p] for p in top} == {0.5}
    assert {multiplier[p] for p in bottom} == {0.25}
    assert {multiplier[p] for p in embeddings} == {0.125}
    # The first Adam step moves each variable by about lr * multiplier.
    variables = [by_path[head[0]], by_path[embeddings[0]]]
    before = [np.array(v.numpy()) for v in variables]
    optimizer.apply_gradients([(np.ones(v.shape, "float32"), v)
                               for v in variables])
    steps = [float(np.abs(v.numpy() - b).max()) for v, b in zip(variables, before)]
    assert steps[0] == pytest.approx(1e-3, rel=1e-2)
    assert steps[1] == pytest.approx(1e-3 * 0.125, rel=1e-2)


def test_gradient_accumulation_applies_every_n_batches():
    optimizer = create_optimizer(1e-2, total_steps=10, warmup_steps=0,
                                 weight_decay=0.0, clip_norm=None,
                                 gradient_accumulation_steps=2)
    variable = keras.Variable(np.zeros(3, "float32"))
    optimizer.apply_gradients([(np.ones(3, "float32"), variable)])
    assert np.all(variable.numpy() == 0)
    optimizer.apply_gradients([(np.ones(3, "float32"), variable)])
    assert np.all(variable.numpy() < 0)


def test_adamw_matches_torch_adamw():
    """Same parameters, gradients (from 1e-1 down to 1e-9, where epsilon
    matters), learning rate, epsilon and weight decay: the updates must
    follow `torch.optim.AdamW` step by step (Keras's own AdamW misses by up
    to 7e-4 here: it adds epsilon before the bias correction)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    initial = rng.normal(size=(6, 40)).astype("float32")
    scales = np.logspace(-1, -9, 40).astype("float32")
    gradients = [(rng.normal(size=(6, 40)) * scales).astype("float32")
                 for _ in range(6)]

    variable = keras.Variable(initial)
    optimizer = AdamW(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-6,
                      beta_1=0.9, beta_2=0.999)
    parameter = torch.nn.Parameter(torch.from_numpy(initial.copy()))
    reference = torch.optim.AdamW([parameter], lr=1e-3, weight_decay=0.01,
                                  eps=1e-6, betas=(0.9, 0.999))
    for gradient in gradients:
        optimizer.apply_gradients([(gradient, variable)])
        parameter.grad = torch.from_numpy(gradient.copy())
        reference.step()
        np.testing.assert_allclose(variable.numpy(),
                                   parameter.detach().numpy(),
                                   rtol=1e-6, atol=1e-7)


def test_embedding_gradients_with_repeated_ids_match_torch():
    """An embedding lookup's gradient is a `tf.IndexedSlices` with one slice
    per occurrence; clipping and the Adam moments must treat a repeated id
    like PyTorch's dense embedding gradient does."""
    torch = pytest.importorskip("torch")
    import tensorflow as tf

    rng = np.random.default_rng(1)
    table = rng.normal(size=(7, 4)).astype("float32")
    weights = rng.normal(size=(4,)).astype("float32")
    batches = [np.array([[1, 1, 1, 2, 0, 0]]), np.array([[1, 3, 3, 3, 3, 1]]),
               np.array([[0, 0, 0, 0, 0, 5]])]

    variable = keras.Variable(table)
    optimizer = create_optimizer(1e-2, total_steps=100, warmup_steps=0,
                                 weight_decay=0.01, clip_norm=1.0)
    embedding = torch.nn.Embedding(7, 4)
    with torch.no_grad():
        embedding.weight.copy_(torch.from_numpy(table))
    reference = torch.optim.AdamW(embedding.parameters(), lr=1e-2,
                                  weight_decay=0.01, eps=1e-6)
    for step, ids in enumerate(batches):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(
                tf.square(tf.gather(variable.value, ids) * weights))
        gradient = tape.gradient(loss, variable.value)
        assert isinstance(gradient, tf.IndexedSlices)
        optimizer.apply_gradients([(gradient, variable)])

        torch_loss = ((embedding(torch.from_numpy(ids))
                       * torch.from_numpy(weights)) ** 2).sum()
        torch_loss.backward()
        torch.nn.utils.clip_grad_norm_(embedding.parameters(), 1.0)
        for group in reference.param_groups:  # the linear-decay schedule
            group["lr"] = 1e-2 * (100 - step) / 100
        reference.step()
        reference.zero_grad()
        np.testing.assert_allclose(variable.numpy(),
                                   embedding.weight.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
