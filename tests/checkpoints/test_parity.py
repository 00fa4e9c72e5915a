"""Numerical parity of our models with independent implementations.

References: HF transformers (PyTorch) `BertModel` on the real
all-MiniLM-L6-v2 checkpoint, keras-hub `BertBackbone` with the same weights,
and HF `BertForPreTraining` for the masked-LM / next-sentence heads.
"""

import csv

import keras_hub
import numpy as np
import pytest
import tokenizers
import torch
import transformers

from tfbert.checkpoints import load_pretrainer, read_checkpoint, write_checkpoint
from tfbert.models import BertEncoder
from tfbert.text.vocab import load_vocabulary

SEQ_LENGTH = 48


def _mrpc_pairs(shared_data_dir, count=6):
    path = shared_data_dir / "glue" / "MRPC" / "dev.tsv"
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [(row[3], row[4]) for row in rows[:count]]


@pytest.fixture(scope="module")
def minilm(minilm_dir, shared_data_dir):
    """Our encoder, HF's BertModel and a padded pair batch (HF tokenizers)."""
    tokenizer = tokenizers.Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    tokenizer.enable_truncation(SEQ_LENGTH)
    tokenizer.enable_padding(length=SEQ_LENGTH)
    pairs = _mrpc_pairs(shared_data_dir)
    # Pairs give non-zero segment ids; a short single sentence gives padding.
    encodings = tokenizer.encode_batch(pairs + ["a short one."])
    inputs = {
        "input_word_ids": np.array([e.ids for e in encodings], np.int32),
        "input_mask": np.array([e.attention_mask for e in encodings], np.int32),
        "input_type_ids": np.array([e.type_ids for e in encodings], np.int32),
    }
    assert inputs["input_type_ids"].any() and not inputs["input_mask"].all()
    # Eager attention: the implementation that returns its probabilities.
    hf_model = transformers.BertModel.from_pretrained(
        str(minilm_dir), attn_implementation="eager").eval()
    with torch.no_grad():
        hf_out = hf_model(
            input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["input_type_ids"],
                                        dtype=torch.long),
            output_attentions=True)
    return {
        "dir": minilm_dir,
        "inputs": inputs,
        "encoder": BertEncoder.from_pretrained(minilm_dir),
        "hf_sequence": hf_out.last_hidden_state.numpy(),
        "hf_pooled": hf_out.pooler_output.numpy(),
        "hf_attentions": [a.numpy() for a in hf_out.attentions],
    }


def _max_diff_at_tokens(a, b, mask):
    return float(np.abs(a - b)[mask.astype(bool)].max())


def test_encoder_matches_hf_bert_model_on_minilm(minilm):
    out = minilm["encoder"](minilm["inputs"])
    mask = minilm["inputs"]["input_mask"]
    assert _max_diff_at_tokens(np.asarray(out["sequence_output"]),
                               minilm["hf_sequence"], mask) <= 1e-4
    assert np.abs(np.asarray(out["pooled_output"])
                  - minilm["hf_pooled"]).max() <= 1e-4


def test_attention_scores_give_hf_attention_probabilities(minilm):
    """`MultiHeadSelfAttention.scores` of each block, on what the block
    reads, against HF's attention probabilities (distillation's attention
    term reads them)."""
    encoder, inputs = minilm["encoder"], minilm["inputs"]
    outputs = encoder(inputs)["encoder_outputs"]
    block_inputs = [encoder.embedding_output(inputs)] + outputs[:-1]
    mask = inputs["input_mask"].astype(bool)
    for i, expected in enumerate(minilm["hf_attentions"]):
        scores = np.asarray(encoder.block(i).attention.scores(
            block_inputs[i], inputs["input_mask"]))
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        assert probs.shape == expected.shape  # [batch, heads, seq, seq]
        # Rows of real query tokens; padding keys have 0 in both.
        diff = np.abs(probs - expected).transpose(0, 2, 1, 3)[mask]
        assert diff.max() <= 1e-5, (i, diff.max())


def test_keras_hub_bert_backbone_parity(minilm, tmp_path):
    """keras-hub's BertBackbone computes GELU in its tanh form, whatever the
    checkpoint was trained with. With `hidden_act="gelu_approximate"` our
    encoder computes the same function, so the two agree to float32 rounding
    (~1e-5). With the exact (erf) GELU that all-MiniLM-L6-v2 was trained
    with, they differ by ~3e-3: tanh-GELU differs from erf-GELU by up to
    ~5e-4 per activation and six layers amplify it. That is keras-hub's
    approximation, not an error on our side (the HF test above agrees to
    ~3e-6 with the exact form). Both LayerNorm epsilons are 1e-12 in the
    backbone, so epsilon plays no part here.
    """
    checkpoint = read_checkpoint(minilm["dir"])
    preset = tmp_path / "keras_hub_preset"
    write_checkpoint(preset, checkpoint.config, checkpoint.weights,
                     vocabulary=load_vocabulary(checkpoint.vocab_path),
                     format="keras_hub")
    backbone = keras_hub.models.BertBackbone.from_preset(str(preset))
    inputs = minilm["inputs"]
    theirs = backbone({"token_ids": inputs["input_word_ids"],
                       "segment_ids": inputs["input_type_ids"],
                       "padding_mask": inputs["input_mask"]})
    mask = inputs["input_mask"]

    tanh_encoder = BertEncoder.from_pretrained(
        minilm["dir"], hidden_act="gelu_approximate")
    ours = tanh_encoder(inputs)
    assert _max_diff_at_tokens(np.asarray(ours["sequence_output"]),
                               np.asarray(theirs["sequence_output"]),
                               mask) <= 5e-5
    assert np.abs(np.asarray(ours["pooled_output"])
                  - np.asarray(theirs["pooled_output"])).max() <= 5e-5

    exact = minilm["encoder"](inputs)
    gelu_gap = _max_diff_at_tokens(np.asarray(exact["sequence_output"]),
                                   np.asarray(theirs["sequence_output"]), mask)
    # Measured 2.9e-3 (KNOWLEDGE.md); the bounds catch a change in either.
    assert 5e-4 < gelu_gap < 2e-2, gelu_gap


@pytest.fixture(scope="module")
def tiny_hf_pretraining_dir(tmp_path_factory):
    """A random-init HF BertForPreTraining saved with safetensors."""
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=97, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, type_vocab_size=2, hidden_act="gelu")
    model = transformers.BertForPreTraining(config).eval()
    # Random init leaves the biases and LayerNorms at 0/1; perturb them so
    # a mix-up between them would show.
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith(("bias", "LayerNorm.weight")):
                param.add_(0.1 * torch.randn_like(param))
    directory = tmp_path_factory.mktemp("hf_pretraining")
    model.save_pretrained(directory, safe_serialization=True)
    assert (directory / "model.safetensors").exists()
    return directory, model


def test_pretrainer_matches_hf_bert_for_pretraining(tiny_hf_pretraining_dir):
    directory, hf_model = tiny_hf_pretraining_dir
    rng = np.random.default_rng(1)
    ids = rng.integers(1, 97, size=(3, 20)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 14:] = 0
    types = np.zeros_like(ids)
    types[:, 9:] = 1
    positions = np.array([[1, 4, 7], [2, 3, 13], [0, 10, 19]], np.int32)

    pretrainer = load_pretrainer(directory, strict=True)
    ours = pretrainer({"input_word_ids": ids, "input_mask": mask,
                       "input_type_ids": types,
                       "masked_lm_positions": positions})
    with torch.no_grad():
        theirs = hf_model(input_ids=torch.tensor(ids, dtype=torch.long),
                          attention_mask=torch.tensor(mask, dtype=torch.long),
                          token_type_ids=torch.tensor(types, dtype=torch.long))
    hf_mlm = np.take_along_axis(theirs.prediction_logits.numpy(),
                                positions[..., None].astype(np.int64), axis=1)
    np.testing.assert_allclose(np.asarray(ours["masked_lm_logits"]), hf_mlm,
                               atol=1e-4)
    np.testing.assert_allclose(np.asarray(ours["next_sentence_logits"]),
                               theirs.seq_relationship_logits.numpy(), atol=1e-4)
