"""Serving module for sequence classifiers and regressors (GLUE-style)."""

import tensorflow as tf

from tfbert.export.serving_module import ServingModule


class ClassifierServingModule(ServingModule):
    """Raw text in, labels out: tokenization runs inside the SavedModel.

    Signatures (see `ServingModule` for names, input specs and checks):
      `serving_default`: `sentence` (string [batch]) for single-sentence
        models, or `sentence1` and `sentence2` for pair models. Returns
        `probabilities` float32 [batch, classes] and `label` string [batch];
        for a regression model, `score` float32 [batch]; for a multi-label
        model (`thresholds` given), `probabilities` float32 [batch, labels]
        (sigmoid) and `predicted` bool [batch, labels] (probability >= the
        label's threshold).
      `serve_token_ids`: the three int32 [batch, seq_length] encoder inputs;
        same outputs plus `logits` float32 [batch, classes] ([batch, 1] for
        regression).

    Args:
      model: a `BertClassifier` (logits [batch, classes], [batch, 1] for
        regression); the export computes them with `inference_logits`.
      preprocessor: the `BertPreprocessor` the model was trained with; its
        `seq_length` is the token-id signature's sequence length.
      label_names: class names in id order, or None for regression.
      text_inputs: input names, ("sentence",) or ("sentence1", "sentence2").
      thresholds: for a multi-label model, its per-label decision
        thresholds (float [labels]); None for single-label models.

    The export carries `assets/labels.txt`: the class names, one a line, in
    the order of the `probabilities` columns (none for regression).
    """

    def __init__(self, model, preprocessor, label_names, text_inputs,
                 thresholds=None):
        super().__init__(model, preprocessor.tokenizer,
                         preprocessor.seq_length, text_inputs)
        self._untracked.preprocessor = preprocessor
        self.label_names = None if label_names is None else tf.constant(
            list(label_names))
        self._untracked.label_names = label_names
        self.thresholds = None if thresholds is None else tf.constant(
            thresholds, tf.float32)

    def assets(self):
        if self.label_names is None:
            return {}
        return {"labels.txt": "".join(f"{name}\n" for name in
                                      self._untracked.label_names)}

    def _outputs(self, logits):
        if self.label_names is None:
            return {"score": logits[:, 0]}
        if self.thresholds is not None:
            probabilities = tf.sigmoid(logits)
            return {"probabilities": probabilities,
                    "predicted": probabilities >= self.thresholds}
        probabilities = tf.nn.softmax(logits, axis=-1)
        return {"probabilities": probabilities,
                "label": tf.gather(self.label_names,
                                   tf.argmax(probabilities, axis=-1))}

    def _logits(self, features):
        return tf.cast(self.model.inference_logits(features), tf.float32)

    def text_outputs(self, *texts):
        features = self._untracked.preprocessor(tuple(texts))
        return self._outputs(self._logits(features))

    def token_id_outputs(self, features):
        logits = self._logits(features)
        return dict(self._outputs(logits), logits=logits)
