"""Serving module for sequence classifiers and regressors (GLUE-style)."""

import tensorflow as tf

from tfbert.data.batching import FEATURES


class ClassifierServingModule(tf.Module):
    """Raw text in, labels out: tokenization runs inside the SavedModel.

    Signatures:
      `serving_default`: `sentence` (string [batch]) for single-sentence
        models, or `sentence1` and `sentence2` for pair models. Returns
        `probabilities` float32 [batch, classes] and `label` string [batch];
        for a regression model, `score` float32 [batch].
      `serve_token_ids`: `input_word_ids`, `input_mask`, `input_type_ids`
        (int32 [batch, seq]) for servers without tensorflow-text ops; same
        outputs plus `logits`.

    Args:
      model: a Keras classifier taking the encoder input dict and returning
        logits [batch, classes] ([batch, 1] for regression).
      preprocessor: the `BertPreprocessor` the model was trained with.
      label_names: class names in id order, or None for regression.
      text_inputs: input names, ("sentence",) or ("sentence1", "sentence2").
    """

    def __init__(self, model, preprocessor, label_names, text_inputs):
        super().__init__()
        self.model = model
        self.preprocessor = preprocessor
        self.label_names = None if label_names is None else tf.constant(
            list(label_names))
        self.text_inputs = tuple(text_inputs)

    def _outputs(self, features):
        logits = tf.cast(self.model(features, training=False), tf.float32)
        if self.label_names is None:
            return {"score": logits[:, 0]}
        probabilities = tf.nn.softmax(logits, axis=-1)
        return {"probabilities": probabilities,
                "label": tf.gather(self.label_names,
                                   tf.argmax(probabilities, axis=-1))}

    def serve_text(self, *texts):
        return self._outputs(self.preprocessor(tuple(texts)))

    def serve_token_ids(self, input_word_ids, input_mask, input_type_ids):
        features = {"input_word_ids": input_word_ids, "input_mask": input_mask,
                    "input_type_ids": input_type_ids}
        outputs = self._outputs(features)
        outputs["logits"] = tf.cast(self.model(features, training=False),
                                    tf.float32)
        return outputs

    def signatures(self):
        """The concrete functions to pass to `export_saved_model`."""
        text_specs = [tf.TensorSpec([None], tf.string, name=name)
                      for name in self.text_inputs]
        id_specs = [tf.TensorSpec([None, None], tf.int32, name=name)
                    for name in FEATURES]
        text_fn = tf.function(self.serve_text, input_signature=text_specs)
        ids_fn = tf.function(self.serve_token_ids, input_signature=id_specs)
        return {"serving_default": text_fn.get_concrete_function(),
                "serve_token_ids": ids_fn.get_concrete_function()}
