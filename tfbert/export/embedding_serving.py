"""`EmbeddingServingModule`: raw text in, sentence embeddings out."""

import tensorflow as tf

from tfbert.export.serving_module import ServingModule


class EmbeddingServingModule(ServingModule):
    """The export of a `SentenceEncoder`: tokenization, encoder, pooling,
    projection and normalisation inside the SavedModel.

    Signatures (see `ServingModule` for names, input specs and checks):
      `serving_default`: `text` (string [batch]) -> `embedding` float32
        [batch, D] (unit norm when the model normalises).
      `serve_token_ids`: the three int32 [batch, seq_length] encoder inputs
        -> `embedding`.

    Both compute what `SentenceEncoder.encode` does
    (`tfbert.inference.task_outputs`).

    Args:
      model: a `SentenceEncoder`.
      preprocessor: the preprocessor to export (default: the model's); its
        `seq_length` is the token-id signature's sequence length.
    """

    def __init__(self, model, preprocessor=None):
        preprocessor = preprocessor or model.preprocessor
        super().__init__(model, preprocessor.tokenizer,
                         preprocessor.seq_length, ("text",))
        self._untracked.preprocessor = preprocessor

    def _outputs(self, features):
        return {"embedding": tf.cast(
            self.model_outputs(features), tf.float32)}

    def text_outputs(self, texts):
        return self._outputs(self._untracked.preprocessor(texts))

    def token_id_outputs(self, features):
        return self._outputs(features)
