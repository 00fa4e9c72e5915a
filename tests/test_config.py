"""`BertConfig`: reading Google and HF config files, validation."""

import json

import pytest
import transformers

from tfbert.config import BertConfig

GOOGLE_BASE = {  # bert_config.json of Google's uncased_L-12_H-768_A-12
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 12, "type_vocab_size": 2, "vocab_size": 30522}


def test_defaults_are_bert_base():
    assert BertConfig() == BertConfig.from_dict(GOOGLE_BASE)
    assert BertConfig().layer_norm_epsilon == 1e-12
    assert BertConfig().head_size == 64


def test_reads_hf_config_written_by_transformers(tmp_path):
    hf = transformers.BertConfig(
        vocab_size=99, hidden_size=48, num_hidden_layers=3,
        num_attention_heads=4, intermediate_size=96, hidden_act="gelu_new",
        layer_norm_eps=1e-7, max_position_embeddings=64, type_vocab_size=3,
        hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.3)
    hf.save_pretrained(tmp_path)
    config = BertConfig.from_json_file(tmp_path / "config.json")
    assert config == BertConfig(
        vocab_size=99, hidden_size=48, num_layers=3, num_heads=4,
        intermediate_size=96, hidden_act="gelu_approximate",
        layer_norm_epsilon=1e-7, max_position_embeddings=64,
        type_vocab_size=3, hidden_dropout=0.2, attention_dropout=0.3)


@pytest.mark.parametrize("style", ["tfbert", "google", "hf"])
def test_json_round_trip(style, tmp_path):
    config = BertConfig(vocab_size=10, hidden_size=8, num_layers=1,
                        num_heads=2, intermediate_size=16, hidden_act="relu")
    config.to_json_file(tmp_path / "c.json", style=style)
    restored = BertConfig.from_json_file(tmp_path / "c.json")
    if style == "google":  # Google's file has no epsilon: BERT's 1e-12.
        assert restored.layer_norm_epsilon == 1e-12
    assert restored == config


def test_hf_style_is_read_by_transformers(tmp_path):
    BertConfig(hidden_act="gelu_approximate", layer_norm_epsilon=1e-6
               ).to_json_file(tmp_path / "config.json", style="hf")
    hf = transformers.BertConfig.from_pretrained(tmp_path)
    assert hf.hidden_act == "gelu_new" and hf.layer_norm_eps == 1e-6


@pytest.mark.parametrize("changes, message", [
    ({"hidden_act": "swish"}, "hidden_act must be one of"),
    ({"hidden_size": 10, "num_heads": 3}, "not divisible by num_heads"),
    ({"num_layers": 0}, "num_layers must be a positive int"),
    ({"vocab_size": 3.5}, "vocab_size must be a positive int"),
    ({"type_vocab_size": -1}, "type_vocab_size must be a non-negative int"),
    ({"embedding_size": 0}, "embedding_size must be a positive int or None"),
    ({"position_offset": 512}, "position_offset \\(512\\) leaves no rows"),
])
def test_invalid_values(changes, message):
    with pytest.raises(ValueError, match=message):
        BertConfig(**changes)


def test_rejects_other_architectures(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(GOOGLE_BASE, model_type="roberta")))
    with pytest.raises(ValueError, match="config.json: .*model_type='roberta'"
                       ".*tfbert.Encoder.from_pretrained"):
        BertConfig.from_json_file(path)
    with pytest.raises(ValueError, match="relative_key"):
        BertConfig.from_dict(dict(GOOGLE_BASE,
                                  position_embedding_type="relative_key"))


def test_file_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.json"):
        BertConfig.from_json_file(tmp_path / "missing.json")
    path = tmp_path / "bad.json"
    path.write_text('{\n "vocab_size": 5,\n}')
    with pytest.raises(ValueError, match=r"bad.json:3: invalid JSON"):
        BertConfig.from_json_file(path)
    path.write_text(json.dumps(dict(GOOGLE_BASE, num_hidden_layers=-1)))
    with pytest.raises(ValueError, match="bad.json: num_layers must be"):
        BertConfig.from_json_file(path)


@pytest.mark.parametrize("style", ["google", "hf"])
@pytest.mark.parametrize("switch", [{"embedding_size": 8},
                                    {"position_offset": 2},
                                    {"share_layers": True},
                                    {"type_vocab_size": 0}])
def test_bert_files_refuse_other_families_switches(style, switch, tmp_path):
    with pytest.raises(ValueError, match=f"a {style} BERT config cannot"):
        BertConfig(**switch).to_json_file(tmp_path / "c.json", style=style)
    BertConfig(**switch).to_json_file(tmp_path / "c.json")
    assert BertConfig.from_json_file(tmp_path / "c.json") == BertConfig(
        **switch)
