"""DistilBERT (Sanh et al., 2019): BERT's blocks without segment embeddings
or pooler."""

import keras

from tfbert.config import BertConfig, hf_activation
from tfbert.families import Family, register
from tfbert.models.encoder import FamilyEncoder


@keras.saving.register_keras_serializable(package="tfbert")
class DistilBertEncoder(FamilyEncoder):
    """DistilBERT's encoder: word + position embeddings (no segment table:
    `input_type_ids` is accepted and ignored), post-LN blocks, no pooler.

    Outputs `sequence_output` and `encoder_outputs` (no `pooled_output`).
    For classification HF's `DistilBertForSequenceClassification` reads
    `sequence_output[:, 0]` (the [CLS] position) through Dense(H) + ReLU,
    dropout and the output layer. Its blocks apply no dropout to the
    attention output; this encoder does (`hidden_dropout`), which changes
    training only.
    """

    classification_activation = "relu"
    sentence_objective = None


def config_from_hf(values):
    """`BertConfig` of a `DistilBertConfig` dict (HF defaults for missing
    keys)."""
    if values.get("sinusoidal_pos_embds"):
        raise ValueError("sinusoidal_pos_embds=true is not supported")
    return BertConfig(
        vocab_size=values.get("vocab_size", 30522),
        hidden_size=values.get("dim", 768),
        num_layers=values.get("n_layers", 6),
        num_heads=values.get("n_heads", 12),
        intermediate_size=values.get("hidden_dim", 3072),
        hidden_act=values.get("activation", "gelu"),
        hidden_dropout=values.get("dropout", 0.1),
        attention_dropout=values.get("attention_dropout", 0.1),
        max_position_embeddings=values.get("max_position_embeddings", 512),
        type_vocab_size=0,
        initializer_range=values.get("initializer_range", 0.02),
        layer_norm_epsilon=1e-12,
        use_pooler=False)


def config_to_hf(config):
    """The `DistilBertConfig` dict of `config`."""
    return dict(
        model_type="distilbert", vocab_size=config.vocab_size,
        dim=config.hidden_size, n_layers=config.num_layers,
        n_heads=config.num_heads, hidden_dim=config.intermediate_size,
        activation=hf_activation(config.hidden_act),
        dropout=config.hidden_dropout,
        attention_dropout=config.attention_dropout,
        max_position_embeddings=config.max_position_embeddings,
        initializer_range=config.initializer_range,
        sinusoidal_pos_embds=False, pad_token_id=0)


register(Family(
    model_type="distilbert",
    encoder_class=DistilBertEncoder,
    tokenizer="BertTokenizer",
    layout="bert",
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    hf_prefix="distilbert.",
    pretraining_class="DistilBertForMaskedLM",
    head_prefixes=(
        ("vocab_transform.", "cls.predictions.transform.dense."),
        ("vocab_layer_norm.", "cls.predictions.transform.LayerNorm."),
        ("vocab_projector.bias", "cls.predictions.bias"),
        ("vocab_projector.weight", "cls.predictions.decoder.weight"),
    ),
    renames=(
        (r"^transformer\.layer\.", "encoder.layer."),
        (r"\.attention\.q_lin\.", ".attention.self.query."),
        (r"\.attention\.k_lin\.", ".attention.self.key."),
        (r"\.attention\.v_lin\.", ".attention.self.value."),
        (r"\.attention\.out_lin\.", ".attention.output.dense."),
        (r"\.sa_layer_norm\.", ".attention.output.LayerNorm."),
        (r"\.ffn\.lin1\.", ".intermediate.dense."),
        (r"\.ffn\.lin2\.", ".output.dense."),
        (r"\.output_layer_norm\.", ".output.LayerNorm."),
    ),
    inverse_renames=(
        (r"^encoder\.layer\.", "transformer.layer."),
        (r"\.attention\.self\.query\.", ".attention.q_lin."),
        (r"\.attention\.self\.key\.", ".attention.k_lin."),
        (r"\.attention\.self\.value\.", ".attention.v_lin."),
        (r"\.attention\.output\.dense\.", ".attention.out_lin."),
        (r"\.attention\.output\.LayerNorm\.", ".sa_layer_norm."),
        (r"\.intermediate\.dense\.", ".ffn.lin1."),
        (r"\.output\.dense\.", ".ffn.lin2."),
        (r"\.output\.LayerNorm\.", ".output_layer_norm."),
    )))
