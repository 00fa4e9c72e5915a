"""Serving module for multiple-choice models (SWAG-style)."""

import numpy as np
import tensorflow as tf

from tfbert.data.multiple_choice import pack_choices
from tfbert.export.serving_module import TOKEN_IDS_SIGNATURE, ServingModule
from tfbert.models.bert_encoder import INPUT_NAMES


class MultipleChoiceServingModule(ServingModule):
    """A context and its choices in, the probability of each choice out.

    Signatures (see `ServingModule` for names, input specs and checks):
      `serving_default`: `context` (string [batch]) and `choices` (string
        [batch, num_choices]). Returns `probabilities` float32
        [batch, num_choices] and `choice` int64 [batch], the most probable
        choice's index.
      `serve_token_ids`: the three int32 [batch * num_choices, seq_length]
        encoder inputs, one row per packed (context, choice) pair, the
        `num_choices` rows of an example consecutive. Same outputs plus
        `logits` float32 [batch, num_choices].

    Args:
      model: a `MultipleChoiceClassifier`; the export computes its scores with
        `tfbert.inference.task_outputs`.
      preprocessor: the preprocessor the model was trained with; its
        `seq_length` is the token-id signature's sequence length.
      num_choices: choices per example.
    """

    def __init__(self, model, preprocessor, num_choices):
        super().__init__(model, preprocessor.tokenizer,
                         preprocessor.seq_length, ("context", "choices"))
        self._untracked.preprocessor = preprocessor
        self.num_choices = int(num_choices)

    def text_input_shape(self, name):
        return [None, self.num_choices] if name == "choices" else [None]

    def warmup_inputs(self, token_ids_only=False):
        # One example: its num_choices rows of token ids.
        inputs = super().warmup_inputs(token_ids_only)

        def choices(request):
            return {name: np.repeat(value, self.num_choices, axis=0)
                    for name, value in request.items()}
        requests = inputs[TOKEN_IDS_SIGNATURE]
        inputs[TOKEN_IDS_SIGNATURE] = (
            [choices(r) for r in requests] if isinstance(requests, list)
            else choices(requests))
        return inputs

    def _outputs(self, features):
        logits = tf.cast(self.model_outputs(features), tf.float32)
        probabilities = tf.nn.softmax(logits, axis=-1)
        return {"probabilities": probabilities,
                "choice": tf.argmax(probabilities, axis=-1),
                "logits": logits}

    def text_outputs(self, context, choices):
        outputs = self._outputs(pack_choices(self._untracked.preprocessor,
                                             context, choices))
        del outputs["logits"]
        return outputs

    def token_id_outputs(self, features):
        return self._outputs({
            name: tf.reshape(features[name],
                             [-1, self.num_choices, self.max_seq_length])
            for name in INPUT_NAMES})
