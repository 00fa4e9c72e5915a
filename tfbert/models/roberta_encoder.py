"""RoBERTa (Liu et al., 2019): BERT's architecture with positions after
the padding row."""

import keras

from tfbert.families import Family, register
from tfbert.models.encoder import (
    FamilyEncoder, bert_style_config, bert_style_hf_config)


@keras.saving.register_keras_serializable(package="tfbert")
class RobertaEncoder(FamilyEncoder):
    """RoBERTa's encoder: BERT's, with position i at row
    `padding_idx + 1 + i` of the position table and one segment type.

    HF numbers positions by counting non-padding ids; with right padding
    (what tfbert's preprocessors produce) that is the same at every real
    token, and padding positions are masked out.

    Outputs `sequence_output`, `encoder_outputs` and, when the checkpoint
    has the pooler (`RobertaModel` does, task models do not),
    `pooled_output`. For classification HF's
    `RobertaForSequenceClassification` does not use the pooler: it reads
    `sequence_output[:, 0]` (`<s>`) through dropout, Dense(H) + tanh,
    dropout and the output layer.
    """

    classification_activation = "tanh"
    sentence_objective = None
    masked_lm_activation = "gelu"


def config_from_hf(values):
    """`BertConfig` of a `RobertaConfig` dict."""
    return bert_style_config(
        values, position_offset=values.get("pad_token_id", 1) + 1)


def config_to_hf(config):
    """The `RobertaConfig` dict of `config`."""
    return bert_style_hf_config(
        config, "roberta", pad_token_id=config.position_offset - 1,
        bos_token_id=0, eos_token_id=2)


register(Family(
    model_type="roberta",
    encoder_class=RobertaEncoder,
    tokenizer="ByteBpeTokenizer",
    layout="roberta",
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    hf_prefix="roberta.",
    pretraining_class="RobertaForMaskedLM",
    head_prefixes=(
        ("lm_head.dense.", "cls.predictions.transform.dense."),
        ("lm_head.layer_norm.", "cls.predictions.transform.LayerNorm."),
        ("lm_head.bias", "cls.predictions.bias"),
        ("lm_head.decoder.", "cls.predictions.decoder."),
    )))
