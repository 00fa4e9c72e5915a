"""Bad checkpoints and bad inputs give errors that name the problem."""

import json

import numpy as np
import pytest

from tfbert.checkpoints import load_pretrainer, read_checkpoint, save_encoder
from tfbert.config import BertConfig
from tfbert.models import BertEncoder
from tfbert.text.vocab import save_vocabulary

CONFIG = BertConfig(vocab_size=30, hidden_size=16, num_layers=1, num_heads=2,
                    intermediate_size=32, max_position_embeddings=16)


@pytest.fixture(scope="module")
def checkpoint_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ckpts") / "hf"
    save_encoder(BertEncoder(CONFIG), directory)
    return directory


def _copy_with_config(checkpoint_dir, tmp_path, **changes):
    directory = tmp_path / "changed"
    directory.mkdir()
    (directory / "model.safetensors").write_bytes(
        (checkpoint_dir / "model.safetensors").read_bytes())
    config = json.loads((checkpoint_dir / "config.json").read_text())
    config.update(changes)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_nonexistent_path_lists_presets(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a preset name, a directory "
                       "nor a .keras file.*minilm-l6-h384-uncased"):
        BertEncoder.from_pretrained(tmp_path / "missing")


def test_unknown_preset_name():
    with pytest.raises(FileNotFoundError, match="'bert-huge-uncased'.*Presets:"):
        BertEncoder.from_pretrained("bert-huge-uncased")


def test_directory_without_checkpoint_files(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(FileNotFoundError,
                       match="not a BERT checkpoint directory.*notes.txt"):
        BertEncoder.from_pretrained(tmp_path)


def test_config_without_weights(checkpoint_dir, tmp_path):
    (tmp_path / "config.json").write_text(
        (checkpoint_dir / "config.json").read_text())
    with pytest.raises(FileNotFoundError,
                       match="no model.safetensors or pytorch_model.bin"):
        BertEncoder.from_pretrained(tmp_path)


def test_google_config_without_checkpoint(tmp_path):
    CONFIG.to_json_file(tmp_path / "bert_config.json", style="google")
    with pytest.raises(FileNotFoundError, match="no bert_model.ckpt.index"):
        BertEncoder.from_pretrained(tmp_path)


def test_corrupt_weights_file(checkpoint_dir, tmp_path):
    (tmp_path / "config.json").write_text(
        (checkpoint_dir / "config.json").read_text())
    (tmp_path / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ValueError, match="model.safetensors: not a readable"):
        BertEncoder.from_pretrained(tmp_path)


def test_invalid_config_json_names_file_and_line(checkpoint_dir, tmp_path):
    (tmp_path / "config.json").write_text('{\n  "hidden_size": 16,\n  oops\n}')
    with pytest.raises(ValueError, match=r"config.json:3: invalid JSON"):
        BertEncoder.from_pretrained(tmp_path)


def test_weights_of_the_wrong_shape_name_the_variable(checkpoint_dir, tmp_path):
    directory = _copy_with_config(checkpoint_dir, tmp_path,
                                  intermediate_size=48)
    with pytest.raises(ValueError, match="(?s)wrong shape.*"
                       "bert/encoder/layer_0/intermediate/dense/kernel: "
                       r"checkpoint \(16, 32\), model \(16, 48\)"):
        BertEncoder.from_pretrained(directory)


def test_more_layers_than_the_checkpoint_lists_missing_variables(
        checkpoint_dir, tmp_path):
    directory = _copy_with_config(checkpoint_dir, tmp_path,
                                  num_hidden_layers=2)
    with pytest.raises(ValueError, match="no value in the checkpoint: "
                       "bert/encoder/layer_1/"):
        BertEncoder.from_pretrained(directory)
    # The opt-out loads what matches.
    BertEncoder.from_pretrained(directory, strict=False)


def test_vocabulary_config_size_mismatch(checkpoint_dir, tmp_path):
    directory = _copy_with_config(checkpoint_dir, tmp_path)
    save_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"],
                    directory / "vocab.txt")
    with pytest.raises(ValueError, match="vocab.txt has 6 tokens but the "
                       "config says vocab_size=30"):
        read_checkpoint(directory)


def test_non_bert_hf_config(checkpoint_dir, tmp_path):
    directory = _copy_with_config(checkpoint_dir, tmp_path,
                                  model_type="roberta")
    with pytest.raises(ValueError, match="config.json: .*model_type='roberta'"):
        BertEncoder.from_pretrained(directory)


def test_pretrainer_from_encoder_only_checkpoint_strict(checkpoint_dir):
    with pytest.raises(ValueError, match="cls/predictions/output_bias"):
        load_pretrainer(checkpoint_dir, strict=True)
    load_pretrainer(checkpoint_dir)  # heads stay randomly initialised


@pytest.fixture(scope="module")
def encoder():
    return BertEncoder(CONFIG)


def _inputs(**changes):
    ids = np.ones((2, 5), np.int32)
    inputs = {"input_word_ids": ids, "input_mask": ids,
              "input_type_ids": np.zeros_like(ids)}
    inputs.update(changes)
    return inputs


def test_float_input_ids_are_rejected(encoder):
    with pytest.raises(ValueError, match="'input_word_ids' must be an integer "
                       "tensor.*float32"):
        encoder(_inputs(input_word_ids=np.full((2, 5), 1.7, np.float32)))


def test_rank_one_inputs_are_rejected(encoder):
    with pytest.raises(ValueError, match=r"'input_mask' must have rank 2.*\(5,\)"):
        encoder(_inputs(input_mask=np.ones(5, np.int32)))


@pytest.mark.parametrize("options", [dict(first_token_only=True), {},
                                     dict(all_blocks=True)])
def test_inference_paths_name_bad_inputs_before_reading_them(encoder, options):
    from tfbert.inference import EncoderInference

    def call(inputs):
        return EncoderInference(encoder)(inputs, **options)

    with pytest.raises(ValueError, match="expects a dict"):
        call([1, 2])
    inputs = _inputs()
    del inputs["input_mask"]
    with pytest.raises(ValueError, match="lack.*input_mask"):
        call(inputs)
    with pytest.raises(ValueError, match=r"'input_mask' must have rank 2"):
        call(_inputs(input_mask=np.ones(5, np.int32)))


def test_missing_input_is_named(encoder):
    inputs = _inputs()
    del inputs["input_type_ids"]
    with pytest.raises(ValueError, match="input_type_ids"):
        encoder(inputs)


def test_sequence_longer_than_position_table(encoder):
    long = np.ones((1, 17), np.int32)
    with pytest.raises(ValueError, match="17 exceeds max_position_embeddings=16"):
        encoder({"input_word_ids": long, "input_mask": long,
                 "input_type_ids": 0 * long})
