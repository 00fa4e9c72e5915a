"""Reading an HF checkpoint saved as `pytorch_model.bin` (the pre-safetensors
format many hub checkpoints still use), checked against HF's own outputs."""

import numpy as np
import torch
import transformers

from tfbert.models import BertEncoder


def test_pytorch_model_bin_matches_hf(tmp_path):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=48,
        max_position_embeddings=32, hidden_act="gelu")
    hf_model = transformers.BertModel(config).eval()
    # transformers 5 always writes safetensors (safe_serialization=False is
    # ignored); pytorch_model.bin is the pickled state dict, as torch.save
    # writes it and transformers 4 did.
    config.save_pretrained(tmp_path)
    torch.save(hf_model.state_dict(), tmp_path / "pytorch_model.bin")

    rng = np.random.default_rng(0)
    ids = rng.integers(1, 64, size=(2, 12)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 7:] = 0
    types = np.zeros_like(ids)
    types[:, 6:] = 1
    with torch.no_grad():
        expected = hf_model(input_ids=torch.tensor(ids, dtype=torch.long),
                            attention_mask=torch.tensor(mask, dtype=torch.long),
                            token_type_ids=torch.tensor(types, dtype=torch.long))

    encoder = BertEncoder.from_pretrained(tmp_path)
    out = encoder({"input_word_ids": ids, "input_mask": mask,
                   "input_type_ids": types})
    real = mask.astype(bool)
    np.testing.assert_allclose(
        np.asarray(out["sequence_output"])[real],
        expected.last_hidden_state.numpy()[real], atol=1e-5)
    np.testing.assert_allclose(np.asarray(out["pooled_output"]),
                               expected.pooler_output.numpy(), atol=1e-5)
