"""The encoder and task models: outputs, serialization, tied decoder, mixed
precision (tiny random configs)."""

import keras
import numpy as np
import pytest

from tfbert.config import BertConfig
from tfbert.models import (
    BertClassifier, BertEncoder, BertPretrainer, BertSpanLabeler,
    BertTokenClassifier)

CONFIG = BertConfig(vocab_size=40, hidden_size=16, num_layers=2, num_heads=2,
                    intermediate_size=32, max_position_embeddings=16)
BATCH, SEQ = 3, 10


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, CONFIG.vocab_size, size=(BATCH, SEQ)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[0, 6:] = 0
    ids[0, 6:] = 0
    types = np.zeros_like(ids)
    types[:, 5:] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def _pretraining_inputs(seed=0):
    return dict(_inputs(seed), masked_lm_positions=np.array(
        [[1, 2], [3, 9], [0, 4]], np.int32))


MODELS = {
    "encoder": (lambda: BertEncoder(CONFIG), _inputs),
    "classifier": (lambda: BertClassifier(BertEncoder(CONFIG), 3), _inputs),
    "regression": (lambda: BertClassifier(BertEncoder(CONFIG), 1), _inputs),
    "span_labeler": (lambda: BertSpanLabeler(BertEncoder(CONFIG)), _inputs),
    "token_classifier": (lambda: BertTokenClassifier(BertEncoder(CONFIG), 5),
                         _inputs),
    "pretrainer": (lambda: BertPretrainer(BertEncoder(CONFIG)),
                   _pretraining_inputs),
}


def _flat(outputs):
    return [np.asarray(x) for x in keras.tree.flatten(outputs)]


def test_encoder_output_shapes_and_dtypes():
    out = BertEncoder(CONFIG)(_inputs())
    assert out["sequence_output"].shape == (BATCH, SEQ, 16)
    assert out["pooled_output"].shape == (BATCH, 16)
    assert len(out["encoder_outputs"]) == CONFIG.num_layers
    assert all(x.dtype == "float32" for x in _flat(out))


def test_encoder_outputs_are_each_blocks_output():
    # Recomputed block by block from the encoder's own layers: output i is
    # block i's output (not, e.g., its input or the final output repeated).
    encoder = BertEncoder(CONFIG)
    inputs = _inputs()
    out = encoder(inputs)
    hidden = encoder.embeddings(inputs["input_word_ids"],
                                inputs["input_type_ids"])
    for block, output in zip(encoder.transformer_blocks,
                             out["encoder_outputs"]):
        hidden = block(hidden, inputs["input_mask"])
        np.testing.assert_allclose(np.asarray(output), np.asarray(hidden),
                                   atol=1e-5)
    first = np.asarray(out["encoder_outputs"][0])
    last = np.asarray(out["encoder_outputs"][-1])
    assert np.abs(first - last).max() > 1e-2
    np.testing.assert_allclose(np.asarray(out["sequence_output"]), last,
                               atol=1e-6)
    kernel, bias = encoder.pooler.get_weights()
    np.testing.assert_allclose(np.asarray(out["pooled_output"]),
                               np.tanh(last[:, 0] @ kernel + bias), atol=1e-5)


def test_task_model_output_shapes():
    assert BertClassifier(BertEncoder(CONFIG), 3)(_inputs()).shape == (BATCH, 3)
    assert BertClassifier(BertEncoder(CONFIG), 1)(_inputs()).shape == (BATCH, 1)
    assert BertTokenClassifier(BertEncoder(CONFIG), 5)(
        _inputs()).shape == (BATCH, SEQ, 5)
    spans = BertSpanLabeler(BertEncoder(CONFIG))(_inputs())
    assert spans["start_logits"].shape == spans["end_logits"].shape == (BATCH, SEQ)
    # Padding can never be predicted as an answer boundary.
    assert np.asarray(spans["start_logits"])[0, 6:].max() <= -1e8
    out = BertPretrainer(BertEncoder(CONFIG))(_pretraining_inputs())
    assert out["masked_lm_logits"].shape == (BATCH, 2, CONFIG.vocab_size)
    assert out["next_sentence_logits"].shape == (BATCH, 2)


def test_padding_does_not_change_real_positions():
    """The key-padding mask: what sits in padded slots is invisible."""
    encoder = BertEncoder(CONFIG)
    inputs = _inputs()
    other = {k: v.copy() for k, v in inputs.items()}
    other["input_word_ids"][0, 6:] = 7
    other["input_type_ids"][0, 6:] = 1
    a = np.asarray(encoder(inputs)["sequence_output"])[0, :6]
    b = np.asarray(encoder(other)["sequence_output"])[0, :6]
    np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.slow
def test_keras_save_and_load(name, tmp_path):
    build, make_inputs = MODELS[name]
    model = build()
    inputs = make_inputs()
    expected = _flat(model(inputs))
    path = tmp_path / f"{name}.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(model)
    assert restored.get_config() == model.get_config()
    for a, b in zip(_flat(restored(inputs)), expected):
        np.testing.assert_array_equal(a, b)


def test_pretrainer_decoder_is_tied_to_word_embeddings():
    pretrainer = BertPretrainer(BertEncoder(CONFIG))
    inputs = _pretraining_inputs()
    tables = [w for w in pretrainer.weights
              if tuple(w.shape) == (CONFIG.vocab_size, CONFIG.hidden_size)]
    assert len(tables) == 1
    before = np.asarray(pretrainer(inputs)["masked_lm_logits"])
    embeddings = pretrainer.encoder.embeddings.word_embeddings
    embeddings.assign(embeddings.numpy() * 2.0)
    after = np.asarray(pretrainer(inputs)["masked_lm_logits"])
    assert np.abs(after - before).max() > 1e-3


@pytest.fixture
def policy():
    """Sets a global dtype policy for one test and always resets it."""
    def set_policy(name):
        keras.mixed_precision.set_global_policy(name)
    yield set_policy
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("name", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_forward_is_finite_float32(policy, name):
    policy(name)
    encoder = BertEncoder(CONFIG)
    assert encoder.transformer_blocks[0].compute_dtype == name.split("_")[1]
    out = encoder(_inputs())
    for value in (out["sequence_output"], out["pooled_output"]):
        assert value.dtype == "float32"
        assert np.isfinite(np.asarray(value)).all()
    pretrainer = BertPretrainer(encoder)
    for value in _flat(pretrainer(_pretraining_inputs())):
        assert value.dtype == "float32" and np.isfinite(value).all()
    spans = BertSpanLabeler(encoder)(_inputs())
    assert spans["start_logits"].dtype == "float32"
    # Variables stay float32 (the optimizer updates full-precision weights).
    assert {w.dtype for w in encoder.weights} == {"float32"}


@pytest.mark.parametrize("name", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_training_step_is_finite(policy, name):
    policy(name)
    model = BertClassifier(BertEncoder(CONFIG), 3)
    model.compile(optimizer=keras.optimizers.AdamW(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True), jit_compile=False)
    before = [w.numpy().copy() for w in model.trainable_weights]
    history = model.fit(_inputs(), np.array([0, 1, 2]), epochs=1,
                        batch_size=BATCH, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    after = [w.numpy() for w in model.trainable_weights]
    assert all(np.isfinite(w).all() for w in after)
    assert any(np.abs(a - b).max() > 0 for a, b in zip(after, before))
