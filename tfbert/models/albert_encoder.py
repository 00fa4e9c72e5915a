"""ALBERT (Lan et al., 2019): factorized embeddings and one transformer block
shared by every layer."""

import keras

from tfbert.models.encoder import (
    Family, FamilyEncoder, bert_style_config, register_family)


@keras.saving.register_keras_serializable(package="tfbert")
class AlbertEncoder(FamilyEncoder):
    """ALBERT's encoder: BERT's embeddings `embedding_size` wide, projected
    to `hidden_size`; one post-LN block applied `num_layers` times; BERT's
    tanh pooler. HF's default activation is `gelu_new` (tanh GELU).

    Outputs `sequence_output`, `encoder_outputs` (one per application of the
    shared block) and `pooled_output`, which HF's
    `AlbertForSequenceClassification` uses (dropout, then the output layer).
    """


def config_from_hf(values):
    """`BertConfig` of an `AlbertConfig` dict (one group of one layer)."""
    for key in ("num_hidden_groups", "inner_group_num"):
        if values.get(key, 1) != 1:
            raise ValueError(f"{key}={values[key]} is not supported (only 1)")
    values = dict(values, hidden_act=values.get("hidden_act", "gelu_new"))
    return bert_style_config(
        values, embedding_size=values.get("embedding_size", 128),
        share_layers=True)


register_family(Family(
    model_type="albert",
    encoder_class=AlbertEncoder,
    config_from_hf=config_from_hf,
    hf_prefix="albert.",
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
    )))
