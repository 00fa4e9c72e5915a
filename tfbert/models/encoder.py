"""`tfbert.Encoder`: the encoder of whichever family a checkpoint holds,
and the base of the families other than BERT.

Every family is a `BertEncoder` configured by `BertConfig`'s switches and
registered in `tfbert.families` by its module; `tfbert.checkpoints` reads and
writes its checkpoints. docs/zoo.md says how to add one.
"""

import dataclasses

import keras

from tfbert import families
from tfbert.config import BertConfig, hf_activation
from tfbert.models.bert_encoder import BertEncoder
from tfbert.models.checkpoint_entry import checkpoints


def bert_style_config(values, **switches):
    """A `BertConfig` from an HF config that uses BERT's key names (ELECTRA,
    RoBERTa, ALBERT), with `switches` replacing fields."""
    config = BertConfig.from_dict(
        {key: value for key, value in values.items() if key != "model_type"})
    return dataclasses.replace(config, **switches)


def bert_style_hf_config(config, model_type, **extra):
    """The HF `config.json` dict, in BERT's key names, of `config`."""
    return dict(
        model_type=model_type, vocab_size=config.vocab_size,
        hidden_size=config.hidden_size, num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        intermediate_size=config.intermediate_size,
        hidden_act=hf_activation(config.hidden_act),
        hidden_dropout_prob=config.hidden_dropout,
        attention_probs_dropout_prob=config.attention_dropout,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        initializer_range=config.initializer_range,
        layer_norm_eps=config.layer_norm_epsilon, **extra)


class Encoder:
    """Builds the encoder of whichever family a checkpoint holds.

    Example:
    ```python
    encoder = tfbert.Encoder.from_pretrained("path/to/hf/roberta")
    type(encoder).__name__  # "RobertaEncoder"
    ```
    """

    @staticmethod
    def families():
        """The registered `model_type`s, BERT's included."""
        return families.model_types()

    @staticmethod
    def from_pretrained(name_or_path, strict=True, **config_overrides):
        """Returns the encoder of a preset name or checkpoint directory.

        A preset's family, or an HF directory's `config.json` `model_type`,
        picks the family; Google TF1, keras-hub and TF Hub layouts are
        BERT's. `config_overrides` replace
        `BertConfig` fields (e.g. `hidden_dropout=0.2`, `use_pooler=False`).
        With `strict`, an encoder variable the checkpoint lacks, or an
        encoder weight the model lacks, is an error listing them (a
        checkpoint without a pooler builds an encoder without one).
        """
        return checkpoints().load_encoder(name_or_path, strict=strict,
                                        **config_overrides)

    from_preset = from_pretrained  # keras-hub's name


@keras.saving.register_keras_serializable(package="tfbert")
class FamilyEncoder(BertEncoder):
    """Base of the non-BERT families' encoders: `from_pretrained` and
    `save_pretrained` (of `BertEncoder`) read and write the family's HF
    layout (config.json + model.safetensors, which `transformers` loads) and
    check that a checkpoint is this family's."""
