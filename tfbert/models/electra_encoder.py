"""ELECTRA (Clark et al., 2020): BERT's blocks on factorized embeddings."""

import dataclasses

import keras

from tfbert.families import Family, register
from tfbert.layers import ReplacedTokenHead
from tfbert.models.checkpoint_entry import checkpoints
from tfbert.models.encoder import (
    FamilyEncoder, bert_style_config, bert_style_hf_config)
from tfbert.models.encoder_task_model import EncoderTaskModel


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

    classification_activation = "gelu"
    sentence_objective = None
    masked_lm_activation = "gelu"


@keras.saving.register_keras_serializable(package="tfbert")
class ElectraDiscriminator(EncoderTaskModel, keras.Model):
    """ELECTRA's pretraining discriminator: an `ElectraEncoder` with
    `ReplacedTokenHead` on its sequence output (HF `ElectraForPreTraining`).

    Inputs: the encoder's input dict. Output: float32 [batch, seq] logits,
    positive where a token was replaced.

    Args:
      encoder: an `ElectraEncoder`.
    """

    def __init__(self, encoder, **kwargs):
        self.encoder = encoder
        self.head = ReplacedTokenHead(
            hidden_act=encoder.config.hidden_act,
            initializer_range=encoder.config.initializer_range,
            name="replaced_token_head")
        inputs = encoder.input
        logits = self.head(encoder(inputs)["sequence_output"])
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    @classmethod
    def from_pretrained(cls, directory, strict=True, **config_overrides):
        """Loads the encoder (strictly) and, from an `ElectraForPreTraining`
        checkpoint, the discriminator head (with `strict`, it must be
        there; without, a missing head starts random, which is logged). A
        directory with a config and no weights file gives a random model of
        that config (logged)."""
        checkpoint = checkpoints().read_checkpoint(directory,
                                                   allow_no_weights=True)
        model = cls(checkpoints().build_encoder(
            checkpoint, encoder_class=ElectraEncoder, **config_overrides))
        if checkpoint.weights:
            checkpoints().load_task_weights(
                _head_variables(model.head), directory, strict,
                "discriminator head")
        return model

    from_preset = from_pretrained  # keras-hub's name

    def save_pretrained(self, directory, tokenizer=None):
        """Writes HF's `ElectraForPreTraining` layout (and `tokenizer`'s
        files), which `from_pretrained` and `transformers` read."""
        checkpoints().save_encoder(
            self.encoder, directory, tokenizer,
            task_variables=_head_variables(self.head),
            architecture="ElectraForPreTraining")


def _head_variables(head):
    """HF names of a `ReplacedTokenHead`'s weights -> (variable,
    transposed)."""
    return {f"discriminator_predictions.{name}.{leaf}": (
        getattr(dense, attribute), attribute == "kernel")
        for name, dense in (("dense", head.dense),
                            ("dense_prediction", head.prediction))
        for leaf, attribute in (("weight", "kernel"), ("bias", "bias"))}


def config_from_hf(values):
    """`BertConfig` of an `ElectraConfig` dict."""
    config = bert_style_config(values, use_pooler=False)
    if config.embedding_size == config.hidden_size:
        # HF builds the projection only for a different width.
        return dataclasses.replace(config, embedding_size=None)
    return config


def config_to_hf(config):
    """The `ElectraConfig` dict of `config`."""
    return bert_style_hf_config(
        config, "electra",
        embedding_size=config.embedding_size or config.hidden_size)


register(Family(
    model_type="electra",
    encoder_class=ElectraEncoder,
    tokenizer="BertTokenizer",
    layout="bert",
    config_from_hf=config_from_hf,
    config_to_hf=config_to_hf,
    hf_prefix="electra.",
    # Masked-LM pretraining of an ELECTRA encoder is its generator's.
    pretraining_class="ElectraForMaskedLM",
    head_prefixes=(
        ("generator_predictions.dense.", "cls.predictions.transform.dense."),
        ("generator_predictions.LayerNorm.",
         "cls.predictions.transform.LayerNorm."),
        ("generator_lm_head.bias", "cls.predictions.bias"),
        ("generator_lm_head.weight", "cls.predictions.decoder.weight"),
    )))
