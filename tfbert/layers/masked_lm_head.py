"""Masked-language-model head with a decoder tied to the word embeddings."""

import keras
from keras import ops

from tfbert.layers.activations import get_activation
from tfbert.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="tfbert")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the original ids at masked positions.

    Gathers the hidden states at `masked_positions`, applies Dense(E) + act +
    LayerNorm (E: the width of the embedding table, H unless the family
    factorizes its embeddings), then multiplies by the transposed word-embedding table (the
    decoder is tied to the embeddings: it owns no copy of them) and adds a
    per-token output bias. Only the masked positions are decoded, which keeps
    the [*, vocab] logits small.

    Args:
      vocab_size: number of output ids.
      hidden_act: activation name of the transform.
      initializer_range: stddev of the truncated-normal initializer.
      layer_norm_epsilon: LayerNorm epsilon (BERT: 1e-12).
      embedding_size: E, the width of the word-embedding table (ALBERT,
        ELECTRA); None means H.

    Call args:
      sequence_output: [batch, seq, H].
      masked_positions: int32 [batch, num_predictions].
      embedding_table: the encoder's word-embedding variable [vocab, E].

    Returns:
      float32 logits [batch, num_predictions, vocab_size].
    """

    def __init__(self, vocab_size, hidden_act="gelu", initializer_range=0.02,
                 layer_norm_epsilon=1e-12, embedding_size=None, **kwargs):
        # No autocasting: the embedding table (a call argument) and the output
        # bias must stay float32, since the logits are float32 under every
        # policy. The transform sub-layer autocasts under its own policy.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.embedding_size = embedding_size

    def build(self, input_shape, *args):
        hidden_size = input_shape[-1]
        embedding_size = self.embedding_size or hidden_size
        self.transform = keras.layers.Dense(
            embedding_size, activation=get_activation(self.hidden_act),
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=self.initializer_range),
            dtype=self.dtype_policy, name="transform")
        self.transform.build((None, None, hidden_size))
        self.layer_norm = LayerNorm(
            epsilon=self.layer_norm_epsilon, dtype="float32", name="layer_norm")
        self.layer_norm.build((None, None, embedding_size))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros")
        self.built = True

    def call(self, sequence_output, masked_positions, embedding_table):
        gathered = ops.take_along_axis(
            sequence_output, ops.cast(masked_positions, "int32")[..., None],
            axis=1)
        hidden = self.layer_norm(self.transform(gathered))
        table = ops.convert_to_tensor(embedding_table)
        logits = ops.matmul(hidden, ops.transpose(ops.cast(table, "float32")))
        return logits + ops.cast(self.output_bias.value, "float32")

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, hidden_act=self.hidden_act,
                      initializer_range=self.initializer_range,
                      layer_norm_epsilon=self.layer_norm_epsilon,
                      embedding_size=self.embedding_size)
        return config
