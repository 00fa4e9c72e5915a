"""ELECTRA (Clark et al., 2020): BERT's blocks on factorized embeddings."""

import dataclasses

import keras

from tfbert.models.encoder import (
    Family, FamilyEncoder, bert_style_config, register_family)


@keras.saving.register_keras_serializable(package="tfbert")
class ElectraEncoder(FamilyEncoder):
    """ELECTRA's discriminator encoder: BERT's embeddings `embedding_size`
    wide, projected to `hidden_size` by a dense layer when the two differ;
    BERT's blocks; no pooler.

    Outputs `sequence_output` and `encoder_outputs` (no `pooled_output`).
    For classification HF's `ElectraForSequenceClassification` reads
    `sequence_output[:, 0]` (the [CLS] position) through dropout, Dense(H) +
    GELU, dropout and the output layer.
    """


def config_from_hf(values):
    """`BertConfig` of an `ElectraConfig` dict."""
    config = bert_style_config(values, use_pooler=False)
    if config.embedding_size == config.hidden_size:
        # HF builds the projection only for a different width.
        return dataclasses.replace(config, embedding_size=None)
    return config


register_family(Family(
    model_type="electra",
    encoder_class=ElectraEncoder,
    config_from_hf=config_from_hf,
    hf_prefix="electra."))
