"""Token, position and segment embeddings of BERT."""

import keras
from keras import ops

from tfbert.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="tfbert")
class BertEmbeddings(keras.layers.Layer):
    """Sums word, learned absolute position and segment embeddings, then
    applies LayerNorm and dropout.

    Position i reads row `position_offset + i` of the position table
    (RoBERTa's tables start real positions after padding_idx + 1 rows).

    Args:
      vocab_size: rows of the word table.
      hidden_size: embedding width H.
      max_position_embeddings: rows of the position table; longer inputs are
        an error.
      type_vocab_size: rows of the segment table; 0 for none (DistilBERT:
        `input_type_ids` is then ignored).
      dropout: dropout rate on the output.
      initializer_range: stddev of the truncated-normal initializer.
      layer_norm_epsilon: LayerNorm epsilon.
      position_offset: row of the position table for the first position.

    Call args:
      input_word_ids: int32 [batch, seq].
      input_type_ids: int32 [batch, seq] (ignored without a segment table).

    Returns:
      [batch, seq, H] in the layer's compute dtype. The sum and LayerNorm are
      computed in float32 whatever the dtype policy (and whatever the
      tables' dtype).
    """

    def __init__(self, vocab_size, hidden_size, max_position_embeddings=512,
                 type_vocab_size=2, dropout=0.1, initializer_range=0.02,
                 layer_norm_epsilon=1e-12, position_offset=0, **kwargs):
        # No autocasting: reading the float32 tables under a float16 policy
        # would copy the whole vocabulary table; the gathered rows are summed
        # and normalised in float32 and only the output is cast.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.position_offset = position_offset
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon, dtype="float32", name="layer_norm")
        self.dropout_layer = keras.layers.Dropout(dropout, name="dropout")

    def build(self, input_shape=None):
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(self.vocab_size, self.hidden_size),
            initializer=init)
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=init)
        self.token_type_embeddings = None
        if self.type_vocab_size:
            self.token_type_embeddings = self.add_weight(
                name="token_type_embeddings",
                shape=(self.type_vocab_size, self.hidden_size),
                initializer=init)
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_length = input_word_ids.shape[1]
        max_length = self.max_position_embeddings - self.position_offset
        if seq_length is not None and seq_length > max_length:
            offset = (f" less position_offset={self.position_offset}"
                      if self.position_offset else "")
            raise ValueError(
                f"sequence length {seq_length} exceeds max_position_embeddings"
                f"={self.max_position_embeddings}{offset}")
        seq_length = ops.shape(input_word_ids)[1]
        # The gathered rows are summed in float32 even when the tables are
        # stored in a lower precision (bfloat16 exports).
        x = ops.cast(ops.take(self.word_embeddings.value, input_word_ids,
                              axis=0), "float32")
        if self.token_type_embeddings is not None:
            x = x + ops.cast(ops.take(self.token_type_embeddings.value,
                                      input_type_ids, axis=0), "float32")
        positions = ops.cast(ops.slice(
            self.position_embeddings.value, (self.position_offset, 0),
            (seq_length, self.hidden_size)), "float32")
        x = self.layer_norm(x + positions[None])
        x = ops.cast(x, self.compute_dtype)
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, input_shape, *args):
        return tuple(input_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size, hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size, dropout=self.dropout,
            initializer_range=self.initializer_range,
            layer_norm_epsilon=self.layer_norm_epsilon,
            position_offset=self.position_offset)
        return config
