"""`BertEncoder`: the BERT transformer stack as a functional Keras model."""

import keras
import numpy as np

from tfbert import families
from tfbert.config import BertConfig
from tfbert.models.checkpoint_entry import checkpoints
from tfbert.layers import BertEmbeddings, Pooler, TransformerBlock

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def check_inputs(inputs, owner="BertEncoder"):
    """Raises a ValueError naming the field (and `owner`, the model's class
    name) when `inputs` is not a dict of integer [batch, seq] tensors with
    the keys `INPUT_NAMES`.

    Keras would otherwise cast float ids to int32 silently.
    """
    if not isinstance(inputs, dict):
        raise ValueError(
            f"{owner} expects a dict with keys {list(INPUT_NAMES)}, got "
            f"{type(inputs).__name__}")
    missing = [name for name in INPUT_NAMES if name not in inputs]
    if missing:
        raise ValueError(f"{owner} inputs lack {missing}; got keys "
                         f"{sorted(inputs)}")
    for name in INPUT_NAMES:
        value = inputs[name]
        dtype = getattr(value, "dtype", None)
        dtype = keras.backend.standardize_dtype(
            np.asarray(value).dtype if dtype is None else dtype)
        if "int" not in dtype:
            raise ValueError(f"{owner} input {name!r} must be an integer "
                             f"tensor [batch, seq], got dtype {dtype}")
        shape = getattr(value, "shape", None)
        shape = np.shape(value) if shape is None else shape
        rank = getattr(shape, "rank", len(shape))
        if rank is not None and rank != 2:
            raise ValueError(f"{owner} input {name!r} must have rank 2 "
                             f"[batch, seq], got shape {tuple(shape)}")


@keras.saving.register_keras_serializable(package="tfbert")
class BertEncoder(keras.Model):
    """BERT encoder with the TF Hub BERT interface.

    Inputs: a dict of int32 [batch, seq] tensors `input_word_ids`,
    `input_mask` (1 = token, 0 = padding) and `input_type_ids` (segment ids).

    Outputs: a dict with
      `sequence_output`: float32 [batch, seq, H], the last block's output;
      `pooled_output`: float32 [batch, H], tanh(Dense(sequence_output[:, 0]))
        (only with `config.use_pooler`);
      `encoder_outputs`: list of num_layers float32 [batch, seq, H], one per
        block.

    The same class builds the other families' architectures from the
    `BertConfig` switches (factorized embeddings, position offset, no
    segment table, no pooler, shared blocks); each family subclasses it (see
    `tfbert.Encoder` and docs/zoo.md). `tfbert.inference.EncoderInference`
    computes the same outputs from the same weights as TensorFlow serving
    runs them (padding skipped, fused kernels).

    Args:
      config: a `BertConfig` (or its dict form).

    Attributes:
      classification_activation: None when HF's sequence classifier of the
        family reads `pooled_output` (BERT, ALBERT); otherwise the
        activation of the dense layer it puts on `sequence_output[:, 0]`
        (`Pooler(activation=...)` on `sequence_output`, newly initialised).
      sentence_objective: the family's pretraining objective on
        `pooled_output` besides masked-LM: "next_sentence" (BERT: is B the
        text after A or from another document?), "sentence_order" (ALBERT:
        are A and B in their order or swapped?) or None (masked-LM only).
      masked_lm_activation: the activation of the family's masked-LM
        transform when HF fixes it (RoBERTa, ELECTRA: "gelu"); None reads
        `config.hidden_act`.

    Example:
    ```python
    encoder = tfbert.BertEncoder.from_pretrained("minilm-l6-h384-uncased")
    preprocessor = tfbert.BertPreprocessor.from_pretrained(
        "minilm-l6-h384-uncased", seq_length=128)
    outputs = encoder(preprocessor(tf.constant(["a sentence"])))
    outputs["pooled_output"].shape  # (1, 384)
    ```
    """

    classification_activation = None
    sentence_objective = "next_sentence"
    masked_lm_activation = None

    def __init__(self, config, **kwargs):
        if not isinstance(config, BertConfig):
            config = BertConfig.from_dict(config)
        self.config = config

        # === Layers ===
        init = keras.initializers.TruncatedNormal(
            stddev=config.initializer_range)
        self.embeddings = BertEmbeddings(
            vocab_size=config.vocab_size,
            hidden_size=config.embedding_size or config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            dropout=config.hidden_dropout,
            initializer_range=config.initializer_range,
            layer_norm_epsilon=config.layer_norm_epsilon,
            position_offset=config.position_offset,
            name="embeddings")
        self.embedding_projection = None
        if config.embedding_size is not None:
            self.embedding_projection = keras.layers.Dense(
                config.hidden_size, kernel_initializer=init,
                name="embedding_projection")
        self.transformer_blocks = [
            TransformerBlock(
                num_heads=config.num_heads,
                intermediate_size=config.intermediate_size,
                hidden_act=config.hidden_act,
                hidden_dropout=config.hidden_dropout,
                attention_dropout=config.attention_dropout,
                initializer_range=config.initializer_range,
                layer_norm_epsilon=config.layer_norm_epsilon,
                name=f"transformer_block_{i}")
            for i in range(1 if config.share_layers else config.num_layers)
        ]
        self.pooler = None
        if config.use_pooler:
            self.pooler = Pooler(initializer_range=config.initializer_range,
                                 name="pooler")

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        encoder_outputs = self._block_outputs(inputs)
        hidden = encoder_outputs[-1]
        outputs = {"sequence_output": hidden,
                   "encoder_outputs": encoder_outputs}
        if self.pooler is not None:
            outputs["pooled_output"] = self.pooler(hidden)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def call(self, inputs, training=None, mask=None):
        check_inputs(inputs, type(self).__name__)
        return super().call(inputs, training=training, mask=mask)

    def checked_inputs(self, inputs):
        """The three encoder inputs of `inputs`, checked as `call` checks
        them (for `tfbert.inference.EncoderInference`)."""
        check_inputs(inputs, type(self).__name__)
        return {name: inputs[name] for name in INPUT_NAMES}

    def block(self, i):
        """The `TransformerBlock` that layer `i` runs (ALBERT's layers all
        run its one block)."""
        return self.transformer_blocks[i % len(self.transformer_blocks)]

    def embedding_output(self, inputs, training=None):
        """What the first block reads: the embeddings of the input dict
        (projected to the hidden size where the family does), float32
        [batch, seq, H]."""
        hidden = self.embeddings(inputs["input_word_ids"],
                                 inputs["input_type_ids"], training=training)
        if self.embedding_projection is not None:
            hidden = self.embedding_projection(hidden)
        return hidden

    def _block_outputs(self, inputs):
        """Each block's output for the symbolic input dict."""
        hidden = self.embedding_output(inputs)
        outputs = []
        for i in range(self.config.num_layers):
            hidden = self.block(i)(hidden, inputs["input_mask"])
            outputs.append(hidden)
        return outputs

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name,
                "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @classmethod
    def from_pretrained(cls, name_or_path, strict=True, **config_overrides):
        """Builds an encoder from a preset name or a checkpoint directory.

        Accepted: a preset name (see `tfbert.presets.PRESETS`); an HF
        directory (config.json + model.safetensors or pytorch_model.bin); a
        Google TF1 directory (bert_config.json + bert_model.ckpt.*); a
        keras-hub BERT preset directory; a `save_pretrained` directory.
        `config_overrides` replace config fields (e.g. `hidden_dropout=0.2`).
        With `strict`, any checkpoint variable left unused or any encoder
        variable left unset is an error listing them. A checkpoint of
        another family is an error (`tfbert.Encoder.from_pretrained` builds
        any family).
        """
        return checkpoints().load_encoder(name_or_path, strict=strict,
                                        encoder_class=cls, **config_overrides)

    def save_pretrained(self, directory, tokenizer=None):
        """Writes config, weights (and the tokenizer's files) so that
        `from_pretrained(directory)` restores this encoder: BERT in HF's
        layout, the other families in theirs (which `transformers` loads)."""
        checkpoints().save_encoder(self, directory, tokenizer=tokenizer)

    from_preset = from_pretrained  # keras-hub's name


families.register(families.Family(
    model_type="bert",
    encoder_class=BertEncoder,
    tokenizer="BertTokenizer",
    layout="bert",
    config_from_hf=BertConfig.from_dict,
    config_to_hf=None,
    hf_prefix="bert.",
    pretraining_class="BertForPreTraining",
    formats=families.FORMATS))
