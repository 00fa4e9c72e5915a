"""`ServingModule`: what every tfbert export shares.

A task's export module subclasses `ServingModule` and supplies only its own
computations: `text_outputs(*texts)` for the raw-text signature and
`token_id_outputs(features)` for the token-id one. The base owns the rest:

  * Signature names and input specs. `serving_default` takes one
    tf.string [batch] tensor per name in `text_inputs`; `serve_token_ids`
    takes `input_word_ids`, `input_mask`, `input_type_ids`, int32
    [batch, max_seq_length]. The sequence length is FIXED: TF Serving's
    server-side batching pads variable dimensions with the tensor's first
    element (1s into `input_mask`), so clients pad to `max_seq_length`
    themselves, with id 0 and mask 0.
  * Input checks, each an `InvalidArgumentError` that names the input:
    text that is not valid UTF-8, text inputs of different batch sizes,
    token ids outside `[0, vocab_size)`, mask or type ids outside {0, 1}.
  * Warmup requests for every signature, and the vocabulary the model was
    trained with (written as `assets/vocab.txt` by `export_saved_model`).
  * Slim exports: only the model's variables are tracked, never the model
    object, so a compiled model's optimizer slots stay out of the SavedModel.

The precision of an export is chosen before the module is built:
`serving_model(model, precision)` gives the model to wrap (every task's
export goes through it, see `tfbert.tasks.runner.Task.export`). With
"bfloat16" the matmuls, bias adds and activations run in bfloat16 and the
weights are stored in bfloat16 (half the size, no per-request casts), while
the embedding sums, LayerNorm, attention softmax, residual stream and
logits stay float32, as they do under Keras's `mixed_bfloat16` policy.
"""

import types

import keras
import numpy as np
import tensorflow as tf

from tfbert.models.bert_encoder import INPUT_NAMES

TEXT_SIGNATURE = "serving_default"
TOKEN_IDS_SIGNATURE = "serve_token_ids"

# --export_precision value -> the Keras dtype policy the exported model is
# rebuilt under.
EXPORT_PRECISIONS = {"float32": "float32", "bfloat16": "bfloat16"}


def serving_model(model, precision="float32"):
    """The model to export at `precision` ("float32" or "bfloat16").

    float32 returns `model` itself. bfloat16 rebuilds it from its config
    under the Keras "bfloat16" dtype policy (layers that numerics need in
    float32 -- LayerNorm, logits -- fix their own dtype and keep it) and
    copies the trained weights in, rounded to bfloat16. The result is for
    inference: training bfloat16 weights loses the small updates.

    Raises:
      ValueError: an unknown precision, or a model whose rebuilt copy does
        not have the same weights (a model without a complete `get_config`).
    """
    if precision not in EXPORT_PRECISIONS:
        raise ValueError(f"export precision must be one of "
                         f"{sorted(EXPORT_PRECISIONS)}, got {precision!r}")
    policy = EXPORT_PRECISIONS[precision]
    if policy == "float32":
        return model
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        copy = type(model).from_config(model.get_config())
    finally:
        keras.config.set_dtype_policy(previous)
    if [w.shape for w in copy.weights] != [w.shape for w in model.weights]:
        raise ValueError(f"{type(model).__name__} rebuilt from its config "
                         "does not have the trained model's weights")
    for target, source in zip(copy.weights, model.weights):
        target.assign(tf.cast(source.value, target.dtype))
    return copy


class ServingModule(tf.Module):
    """Base of the export modules (see the module docstring).

    Args:
      model: the trained Keras model (compiled or not; its optimizer is not
        exported).
      tokenizer: the tokenizer the model was trained with (any family's).
      max_seq_length: the fixed length of `serve_token_ids` inputs.
      text_inputs: names of the raw-text inputs, in call order.
      name: module name.
    """

    def __init__(self, model, tokenizer, max_seq_length, text_inputs,
                 name=None):
        super().__init__(name=name)
        # A plain namespace: TensorFlow's object graph does not follow it, so
        # the SavedModel holds neither the model's optimizer nor Keras state.
        self._untracked = types.SimpleNamespace(model=model,
                                                tokenizer=tokenizer)
        self.max_seq_length = int(max_seq_length)
        self.text_inputs = tuple(text_inputs)
        # What the signatures capture: the weights (and seed states), and the
        # tokenizer's lookup tables (byte-level BPE, SentencePiece). The
        # tf.Variables behind the Keras variables are tracked, not the Keras
        # variables: tracking those saves a second set of variables, and the
        # SavedModel's restore op (all that TF Serving and any TF1-style
        # loader run) then fills that set while the signatures read the
        # other, never restored one.
        self._variables = [variable.value for variable in model.variables]
        self._tokenizer_resources = tokenizer

    @property
    def model(self):
        return self._untracked.model

    @property
    def tokenizer(self):
        return self._untracked.tokenizer

    # -- what a task supplies -----------------------------------------------

    def text_outputs(self, *texts):
        """Outputs of `serving_default` for checked tf.string [batch] texts,
        one per name in `text_inputs`."""
        raise NotImplementedError

    def token_id_outputs(self, features):
        """Outputs of `serve_token_ids` for checked encoder inputs (dict of
        int32 [batch, max_seq_length])."""
        raise NotImplementedError

    # -- the signatures -----------------------------------------------------

    def serve_text(self, *texts):
        """The `serving_default` computation: checks, then `text_outputs`."""
        return self.text_outputs(*self._checked_texts(texts))

    def serve_token_ids(self, input_word_ids, input_mask, input_type_ids):
        """The `serve_token_ids` computation: checks, then
        `token_id_outputs`."""
        features = self._checked_token_ids(dict(zip(
            INPUT_NAMES, (input_word_ids, input_mask, input_type_ids))))
        return self.token_id_outputs(features)

    def signatures(self, token_ids_only=False):
        """Signature name -> concrete function, for `tf.saved_model.save`.

        The functions are created here, not stored on the module, so a
        token-ids-only export holds no tokenizer ops at all.
        """
        id_specs = [tf.TensorSpec([None, self.max_seq_length], tf.int32,
                                  name=name) for name in INPUT_NAMES]
        token_ids = tf.function(self.serve_token_ids, input_signature=id_specs,
                                autograph=False)
        signatures = {TOKEN_IDS_SIGNATURE: token_ids.get_concrete_function()}
        if not token_ids_only:
            text_specs = [tf.TensorSpec([None], tf.string, name=name)
                          for name in self.text_inputs]
            text = tf.function(self.serve_text, input_signature=text_specs)
            signatures[TEXT_SIGNATURE] = text.get_concrete_function()
        return signatures

    def warmup_inputs(self, token_ids_only=False):
        """Signature name -> {input name: numpy array}: one small request per
        signature, for TF Serving's warmup file."""
        ids = np.zeros([1, self.max_seq_length], np.int32)
        ids[0, :2] = [self.tokenizer.cls_id, self.tokenizer.sep_id]
        mask = np.zeros_like(ids)
        mask[0, :2] = 1
        inputs = {TOKEN_IDS_SIGNATURE: dict(zip(
            INPUT_NAMES, (ids, mask, np.zeros_like(ids))))}
        if not token_ids_only:
            inputs[TEXT_SIGNATURE] = {
                name: np.array([b"The warm-up request."])
                for name in self.text_inputs}
        return inputs

    # -- input checks ---------------------------------------------------------

    def _checked_texts(self, texts):
        checks = []
        for name, text in zip(self.text_inputs, texts):
            valid = tf.equal(text, tf.strings.unicode_transcode(
                text, "UTF-8", "UTF-8", errors="replace"))
            checks.append(tf.debugging.Assert(tf.reduce_all(valid), [
                f"input {name} is not valid UTF-8 at batch index",
                tf.where(~valid)[:1, 0]]))
        first = self.text_inputs[0]
        for name, text in zip(self.text_inputs[1:], texts[1:]):
            checks.append(tf.debugging.assert_equal(
                tf.size(texts[0]), tf.size(text), message=(
                    f"inputs {first} and {name} must have the same "
                    "batch size")))
        with tf.control_dependencies(checks):
            return [tf.identity(text) for text in texts]

    def _checked_token_ids(self, features):
        vocab_size = self.tokenizer.vocab_size
        bounds = {"input_word_ids": vocab_size, "input_mask": 2,
                  "input_type_ids": 2}
        checks = []
        for name, upper in bounds.items():
            values = features[name]
            inside = (values >= 0) & (values < upper)
            checks.append(tf.debugging.Assert(tf.reduce_all(inside), [
                f"input {name} has values outside [0, {upper}) at "
                "[batch, position]", tf.where(~inside)[:1]]))
        with tf.control_dependencies(checks):
            return {name: tf.identity(value)
                    for name, value in features.items()}
