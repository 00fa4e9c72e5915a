"""Serving module for sequence classifiers and regressors (GLUE-style)."""

import numpy as np
import tensorflow as tf

from tfbert.export.serving_module import ServingModule
from tfbert.text.windows import document_windows, special_token_count

# --window_pooling -> how a text's windows' logits are pooled.
_POOLING = {"mean": tf.math.unsorted_segment_mean,
            "max": tf.math.unsorted_segment_max}
# TF Serving's method names of the tf.Example signatures.
METHOD_NAMES = {"classify": "tensorflow/serving/classify",
                "regress": "tensorflow/serving/regress"}


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
      `classify` (`regress` for regression), TF Serving's Classify (resp.
        Regress) API: `inputs`, serialized `tf.Example`s (string [batch])
        whose bytes features carry the texts under the `serving_default`
        input names. Returns `classes` string [batch, classes] (the class
        names) and `scores` float32 [batch, classes] (the `probabilities`);
        for regression, `outputs` float32 [batch] (the `score`).
      `serve_token_ids`: the three int32 [batch, seq_length] encoder inputs;
        same outputs plus `logits` float32 [batch, classes] ([batch, 1] for
        regression).

    Args:
      model: a `BertClassifier` (logits [batch, classes], [batch, 1] for
        regression); the export computes them with
        `tfbert.inference.task_outputs`.
      preprocessor: the `Preprocessor` the model was trained with; its
        `seq_length` is the token-id signature's sequence length.
      label_names: class names in id order, or None for regression.
      text_inputs: input names, ("sentence",) or ("sentence1", "sentence2").
      thresholds: for a multi-label model, its per-label decision
        thresholds (float [labels]); None for single-label models.
      doc_stride: for a long-document model (one text input), the raw-text
        signatures cut each text into windows starting every `doc_stride`
        tokens (`tfbert.text.windows`) and pool the windows' logits by
        `window_pooling` ("mean" or "max"); None truncates long texts.

    The export carries `assets/labels.txt`: the class names, one a line, in
    the order of the `probabilities` columns (none for regression).
    """

    def __init__(self, model, preprocessor, label_names, text_inputs,
                 thresholds=None, doc_stride=None, window_pooling="mean"):
        super().__init__(model, preprocessor.tokenizer,
                         preprocessor.seq_length, text_inputs)
        self._untracked.preprocessor = preprocessor
        self.label_names = None if label_names is None else tf.constant(
            list(label_names))
        self._untracked.label_names = label_names
        self.thresholds = None if thresholds is None else tf.constant(
            thresholds, tf.float32)
        if doc_stride and len(self.text_inputs) != 1:
            raise ValueError("doc_stride needs a model of one text input")
        if window_pooling not in _POOLING:
            raise ValueError(f"window_pooling must be one of "
                             f"{sorted(_POOLING)}, got {window_pooling!r}")
        self._untracked.windows = doc_stride and (
            preprocessor.seq_length - special_token_count(preprocessor),
            int(doc_stride), _POOLING[window_pooling])

    @property
    def example_signature(self):
        """The name of the tf.Example signature."""
        return "regress" if self.label_names is None else "classify"

    def signatures(self, token_ids_only=False, constant_kernels=False,
                   feed_forward_shards=None, limits=None, xla=False):
        """`ServingModule.signatures` and, with text, the tf.Example one."""
        signatures = super().signatures(token_ids_only, constant_kernels,
                                        feed_forward_shards, limits, xla)
        if not token_ids_only:
            examples = tf.function(self.serve_examples, input_signature=[
                tf.TensorSpec([None], tf.string, name="inputs")],
                autograph=False)
            signatures[self.example_signature] = (
                examples.get_concrete_function())
        return signatures

    def warmup_inputs(self, token_ids_only=False):
        inputs = super().warmup_inputs(token_ids_only)
        if not token_ids_only:
            example = tf.train.Example(features=tf.train.Features(feature={
                name: tf.train.Feature(bytes_list=tf.train.BytesList(
                    value=[b"The warm-up request."]))
                for name in self.text_inputs}))
            inputs[self.example_signature] = {
                "inputs": np.array([example.SerializeToString()])}
        return inputs

    def method_names(self):
        return {self.example_signature: METHOD_NAMES[self.example_signature]}

    def serve_examples(self, serialized):
        """The Classify/Regress computation over serialized tf.Examples."""
        features = tf.io.parse_example(serialized, {
            name: tf.io.FixedLenFeature([], tf.string)
            for name in self.text_inputs})
        outputs = self.serve_text(*(features[name]
                                    for name in self.text_inputs))
        if self.label_names is None:
            return {"outputs": outputs["score"]}
        scores = outputs["probabilities"]
        return {"classes": tf.tile(self.label_names[tf.newaxis],
                                   [tf.shape(scores)[0], 1]),
                "scores": scores}

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
        return tf.cast(self.model_outputs(features), tf.float32)

    def text_outputs(self, *texts):
        preprocessor = self._untracked.preprocessor
        if not self._untracked.windows:
            return self._outputs(self._logits(preprocessor(tuple(texts))))
        max_tokens, stride, pool = self._untracked.windows
        windows, document = document_windows(
            preprocessor.tokenizer.tokenize(texts[0]), max_tokens, stride)
        logits = self._logits(self.windows_checked(
            preprocessor.pack([windows]), f"input {self.text_inputs[0]}"))
        return self._outputs(pool(logits, document,
                                  num_segments=tf.shape(texts[0])[0]))

    def token_id_outputs(self, features):
        logits = self._logits(features)
        return dict(self._outputs(logits), logits=logits)
