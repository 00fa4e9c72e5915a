"""ALBERT (Lan et al., 2019): factorized embeddings and one transformer block
shared by every layer."""

import keras

from tfbert.families import Family, register
from tfbert.models.encoder import (
    FamilyEncoder, bert_style_config, bert_style_hf_config)


@keras.saving.register_keras_serializable(package="tfbert")
class AlbertEncoder(FamilyEncoder):
    """ALBERT's encoder: BERT's embeddings `embedding_size` wide, projected
    to `hidden_size`; one post-LN block applied `num_layers` times; BERT's
    tanh pooler. HF's default activation is `gelu_new` (tanh GELU).

    Outputs `sequence_output`, `encoder_outputs` (one per application of the
    shared block) and `pooled_output`, which HF's
    `AlbertForSequenceClassification` uses (dropout, then the output layer).
    """

    sentence_objective = "sentence_order"


def config_from_hf(values):
    """`BertConfig` of an `AlbertConfig` dict (one group of one layer)."""
    for key in ("num_hidden_groups", "inner_group_num"):
        if values.get(key, 1) != 1:
            raise ValueError(f"{key}={values[key]} is not supported (only 1)")
    values = dict(values, hidden_act=values.get("hidden_act", "gelu_new"))
    return bert_style_config(
        values, embedding_size=values.get("embedding_size", 128),
        share_layers=True)


def config_to_hf(config):
    """The `AlbertConfig` dict of `config`."""
    return bert_style_hf_config(
        config, "albert", embedding_size=config.embedding_size,
        num_hidden_groups=1, inner_group_num=1)


register(Family(
    model_type="albert",
    encoder_class=AlbertEncoder,
    tokenizer="SentencePieceTokenizer",
    layout="bert",
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    hf_prefix="albert.",
    pretraining_class="AlbertForPreTraining",
    head_prefixes=(
        ("predictions.dense.", "cls.predictions.transform.dense."),
        ("predictions.LayerNorm.", "cls.predictions.transform.LayerNorm."),
        ("predictions.bias", "cls.predictions.bias"),
        ("predictions.decoder.", "cls.predictions.decoder."),
        ("sop_classifier.classifier.", "cls.seq_relationship."),
    ),
    renames=(
        (r"^encoder\.embedding_hidden_mapping_in\.", "embeddings_project."),
        (r"^encoder\.albert_layer_groups\.0\.albert_layers\.0\.",
         "encoder.layer.0."),
        (r"\.attention\.(query|key|value)\.", r".attention.self.\1."),
        (r"\.attention\.dense\.", ".attention.output.dense."),
        (r"\.attention\.LayerNorm\.", ".attention.output.LayerNorm."),
        (r"\.ffn\.", ".intermediate.dense."),
        (r"\.ffn_output\.", ".output.dense."),
        (r"\.full_layer_layer_norm\.", ".output.LayerNorm."),
        (r"^pooler\.", "pooler.dense."),
    ),
    inverse_renames=(
        (r"^embeddings_project\.", "encoder.embedding_hidden_mapping_in."),
        (r"\.attention\.self\.(query|key|value)\.", r".attention.\1."),
        (r"\.attention\.output\.dense\.", ".attention.dense."),
        (r"\.attention\.output\.LayerNorm\.", ".attention.LayerNorm."),
        (r"\.intermediate\.dense\.", ".ffn."),
        (r"\.output\.dense\.", ".ffn_output."),
        (r"\.output\.LayerNorm\.", ".full_layer_layer_norm."),
        (r"^encoder\.layer\.0\.",
         "encoder.albert_layer_groups.0.albert_layers.0."),
        (r"^pooler\.dense\.", "pooler."),
    )))
