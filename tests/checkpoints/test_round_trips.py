"""Writing a checkpoint in each layout and reading it back (tiny configs)."""

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from tfbert.checkpoints import (
    load_pretrainer, read_checkpoint, save_encoder, save_pretrainer,
    write_checkpoint)
from tfbert.checkpoints.variable_map import encoder_variables, read_variables
from tfbert.config import BertConfig
from tfbert.models import BertEncoder, BertPretrainer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    f"w{i}" for i in range(43)]
CONFIG = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_layers=2,
                    num_heads=2, intermediate_size=32,
                    max_position_embeddings=32)


def _randomize(model, seed=0):
    """Gives every variable (biases and LayerNorms included) random values,
    so that a swapped or transposed variable changes the outputs."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(0, 0.2, variable.shape).astype("float32"))
    return model


@pytest.fixture(scope="module")
def encoder():
    return _randomize(BertEncoder(CONFIG))


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(3)
    ids = rng.integers(0, len(VOCAB), size=(2, 12)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[0, 9:] = 0
    types = np.zeros_like(ids)
    types[:, 6:] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


def _assert_same_weights(a, b):
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("format", ["hf", "tf1", "keras_hub"])
def test_write_read_round_trip(encoder, format, tmp_path):
    weights = read_variables(encoder_variables(encoder))
    write_checkpoint(tmp_path / "ckpt", CONFIG, weights, vocabulary=VOCAB,
                     format=format)
    checkpoint = read_checkpoint(tmp_path / "ckpt")
    assert checkpoint.format == format
    _assert_same_weights(checkpoint.weights, weights)
    expected = CONFIG
    if format == "keras_hub":
        # keras-hub has one dropout rate and no GELU choice (see its module).
        expected = BertConfig(**{**CONFIG.to_dict(),
                                 "hidden_act": "gelu_approximate"})
    assert checkpoint.config == expected
    assert checkpoint.vocab_path is not None


def test_tf1_layout_uses_google_variable_names(encoder, tmp_path):
    write_checkpoint(tmp_path / "ckpt", CONFIG,
                     read_variables(encoder_variables(encoder)), format="tf1")
    shapes = dict(tf.train.list_variables(str(tmp_path / "ckpt" /
                                              "bert_model.ckpt")))
    assert shapes["bert/encoder/layer_1/attention/self/query/kernel"] == [16, 16]
    assert shapes["bert/encoder/layer_0/intermediate/dense/kernel"] == [16, 32]
    assert shapes["bert/embeddings/word_embeddings"] == [len(VOCAB), 16]
    assert (tmp_path / "ckpt" / "bert_config.json").exists()


def test_tf1_reader_skips_optimizer_slots(encoder, tmp_path):
    weights = read_variables(encoder_variables(encoder))
    names = sorted(weights) + ["global_step",
                               "bert/pooler/dense/kernel/adam_m",
                               "bert/pooler/dense/kernel/adam_v"]
    values = [weights[n] for n in sorted(weights)] + [
        np.array(7, np.int64), weights["bert/pooler/dense/kernel"],
        weights["bert/pooler/dense/kernel"]]
    directory = tmp_path / "google"
    directory.mkdir()
    CONFIG.to_json_file(directory / "bert_config.json", style="google")
    tf.raw_ops.SaveV2(prefix=str(directory / "bert_model.ckpt"),
                      tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=values)
    _assert_same_weights(read_checkpoint(directory).weights, weights)
    BertEncoder.from_pretrained(directory)


def test_hf_transformers_loads_what_we_write(encoder, inputs, tmp_path):
    save_encoder(encoder, tmp_path / "hf")
    hf_model = transformers.BertModel.from_pretrained(str(tmp_path / "hf"))
    hf_model.eval()
    with torch.no_grad():
        theirs = hf_model(
            input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["input_type_ids"],
                                        dtype=torch.long))
    ours = encoder(inputs)
    mask = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(
        np.asarray(ours["sequence_output"])[mask],
        theirs.last_hidden_state.numpy()[mask], atol=1e-4)
    np.testing.assert_allclose(np.asarray(ours["pooled_output"]),
                               theirs.pooler_output.numpy(), atol=1e-4)


def test_save_pretrained_from_pretrained(encoder, inputs, tmp_path):
    from tfbert.text.bert_tokenizer import BertTokenizer

    encoder.save_pretrained(tmp_path / "saved",
                            tokenizer=BertTokenizer(VOCAB))
    assert (tmp_path / "saved" / "vocab.txt").read_text().split() == VOCAB
    restored = BertEncoder.from_pretrained(tmp_path / "saved")
    assert restored.config == CONFIG
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(np.asarray(restored(inputs)[key]),
                                      np.asarray(encoder(inputs)[key]))


def test_config_overrides_apply_on_load(encoder, tmp_path):
    save_encoder(encoder, tmp_path / "hf")
    restored = BertEncoder.from_pretrained(tmp_path / "hf", hidden_dropout=0.3)
    assert restored.config.hidden_dropout == 0.3


def test_pretrainer_round_trip_with_heads(encoder, inputs, tmp_path):
    pretrainer = _randomize(BertPretrainer(BertEncoder(CONFIG)), seed=5)
    batch = dict(inputs, masked_lm_positions=np.array([[1, 2], [3, 8]],
                                                      np.int32))
    expected = pretrainer(batch)
    for format in ("hf", "tf1"):
        save_pretrainer(pretrainer, tmp_path / format, format=format)
        restored = load_pretrainer(tmp_path / format, strict=True)
        for key in ("masked_lm_logits", "next_sentence_logits"):
            np.testing.assert_array_equal(np.asarray(restored(batch)[key]),
                                          np.asarray(expected[key]))
    # HF's BertForPreTraining reads our heads too.
    hf_model = transformers.BertForPreTraining.from_pretrained(
        str(tmp_path / "hf")).eval()
    with torch.no_grad():
        theirs = hf_model(
            input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["input_type_ids"],
                                        dtype=torch.long))
    np.testing.assert_allclose(np.asarray(expected["next_sentence_logits"]),
                               theirs.seq_relationship_logits.numpy(),
                               atol=1e-4)
    hf_mlm = np.take_along_axis(
        theirs.prediction_logits.numpy(),
        batch["masked_lm_positions"][..., None].astype(np.int64), axis=1)
    np.testing.assert_allclose(np.asarray(expected["masked_lm_logits"]),
                               hf_mlm, atol=1e-4)


def test_encoder_loads_from_a_pretraining_checkpoint(encoder, tmp_path):
    pretrainer = _randomize(BertPretrainer(BertEncoder(CONFIG)), seed=6)
    save_pretrainer(pretrainer, tmp_path / "pt")
    restored = BertEncoder.from_pretrained(tmp_path / "pt")  # heads ignored
    _assert_same_weights(read_variables(encoder_variables(restored)),
                         read_variables(encoder_variables(pretrainer.encoder)))
