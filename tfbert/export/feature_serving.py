"""Serving module for frozen-encoder features (the feature-based approach)."""

from tfbert.export.serving_module import ServingModule


class FeatureServingModule(ServingModule):
    """Raw text in, one pooled feature vector per text out.

    Signatures (see `ServingModule` for names, input specs and checks):
      `serving_default`: `text` (string [batch]).
      `serve_token_ids`: the three int32 [batch, seq_length] encoder inputs.
    Both return `features` float32 [batch, feature_size]: the extractor's
    layers pooled by its `pooling` and joined by its `layer_combination`.

    Args:
      extractor: a `tfbert.feature_extractor.FeatureExtractor`; its
        preprocessor's `seq_length` is the token-id signature's length.
    """

    def __init__(self, extractor):
        super().__init__(extractor.encoder, extractor.preprocessor.tokenizer,
                         extractor.preprocessor.seq_length, ("text",))
        self._untracked.extractor = extractor

    def text_outputs(self, text):
        extractor = self._untracked.extractor
        return self.token_id_outputs(extractor.preprocessor(text))

    def token_id_outputs(self, features):
        return {"features": self._untracked.extractor.pooled(
            features, self.feed_forward_shards)}
