"""`ServingModule`: what every tfbert export shares.

A task's export module subclasses `ServingModule` and supplies only its own
computations: `text_outputs(*texts)` for the raw-text signature and
`token_id_outputs(features)` for the token-id one; a module that cuts a
text into several windows passes the encoder inputs it builds through
`windows_checked`. The base owns the rest:

  * Signature names and input specs. `serving_default` takes one
    tf.string [batch] tensor per name in `text_inputs`; `serve_token_ids`
    takes `input_word_ids`, `input_mask`, `input_type_ids`, int32
    [batch, max_seq_length]. The sequence length is FIXED: TF Serving's
    server-side batching pads variable dimensions with the tensor's first
    element (1s into `input_mask`), so clients pad to `max_seq_length`
    themselves, with id 0 and mask 0.
  * Input checks, each an `InvalidArgumentError` that names the input:
    an input of another shape than its spec (a text input that is not a
    vector, token ids not [batch, max_seq_length]), text that is not valid
    UTF-8, text inputs of different batch sizes, token ids outside
    `[0, vocab_size)`, mask or type ids outside {0, 1}.
  * Request bounds (`RequestLimits`, chosen at export): characters per
    text and per request, checked before any tokenization, and encoder
    windows per request, checked before the encoder runs; a request over a
    bound is refused with an `InvalidArgumentError` naming the input and
    the bound, so one request cannot take a server's memory or minutes of
    its time.
  * Warmup requests for every signature, and the vocabulary the model was
    trained with (written as `assets/vocab.txt` by `export_saved_model`).
  * Slim exports: only the model's weights are saved, never the model
    object, so a compiled model's optimizer slots stay out of the SavedModel.

The precision of an export is chosen before the module is built:
`serving_model(model, precision)` gives the model to wrap (every task's
export goes through it, see `tfbert.tasks.runner.Task.export`). With
"bfloat16" the matmuls, bias adds and activations run in bfloat16 and the
weights are stored in bfloat16 (half the size, no per-request casts), while
the embedding sums, LayerNorm, attention softmax, residual stream and
logits stay float32, as they do under Keras's `mixed_bfloat16` policy.

Every signature computes the model's outputs on `tfbert.inference`
(`ServingModule.model_outputs`: padding skipped, fused kernels, a
classifier's last block for the first token only), from the model's own
weights as the export stores them.

A bfloat16 export can store its matmul kernels as graph constants instead
of variables (`signatures(constant_kernels=True)`, the runner's
--export_constant_kernels): TensorFlow's oneDNN matmul kernels run faster
on constant weights on a CPU with AMX, as they can keep what they derive
from a weight across calls. The price is memory: loaders copy a graph's
constants several times (see benchmarks/RESULTS.md for both), so it is
not the default. The
constants live in one function that both signatures call, so the
SavedModel holds them once and they are constants to TF Serving's loader
and to `tf.saved_model.load` alike. Biases, LayerNorm and embedding tables
stay variables (Grappler folds a constant bias of zeros away, and the
matmul + bias + GELU fusion with it; a gather gains nothing). float32
exports keep every weight a variable: there constant kernels made batch-1
latency worse and batch 32 no faster. A SavedModel's graph must stay
under protobuf's 2 GB, so at most `MAX_CONSTANT_BYTES` of kernels.

An export with variables stores each transformer block's feed-forward
kernels as `FEED_FORWARD_SHARDS` column shards (the feed-forward layer is
computed from them, `tfbert.inference.feed_forward_shards`): on a small
batch TensorFlow then runs the shards' matmuls side by side on as many
cores, where one whole matmul barely uses a second one (figures in
benchmarks/RESULTS.md). It holds the shards instead of the whole kernels,
so its size does not change.
"""

import contextlib
import math
import types

import keras
import numpy as np
import tensorflow as tf

from tfbert.inference import CompiledEncoder
from tfbert.inference import feed_forward_shards as column_shards
from tfbert.inference import task_outputs
from tfbert.layers.transformer_block import TransformerBlock
from tfbert.models.bert_encoder import INPUT_NAMES
from tfbert_config.export import FEED_FORWARD_SHARDS, RequestLimits

TEXT_SIGNATURE = "serving_default"
TOKEN_IDS_SIGNATURE = "serve_token_ids"

# --export_precision value -> the Keras dtype policy the exported model is
# rebuilt under.
EXPORT_PRECISIONS = {"float32": "float32", "bfloat16": "bfloat16"}
# Kernels an export may hold as graph constants: a GraphDef
# (saved_model.pb) must stay under protobuf's 2 GB.
MAX_CONSTANT_BYTES = 1_500_000_000


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
        # How the signatures read the weights and which request bounds
        # they check (see `signatures`); until then, the model's own
        # variables and the default bounds.
        self._untracked.weights = None
        self._untracked.outputs_functions = None
        self._untracked.limits = RequestLimits()
        # The XLA-compiled encoder of an export made with `xla`, else None.
        self._untracked.compiled = None
        self._track_variables()
        self._tokenizer_resources = tokenizer

    def _track_variables(self):
        """What the signatures capture: the model's weights as the export
        stores them (`_ExportWeights`; seed states included), and the
        tokenizer's lookup tables (byte-level BPE, SentencePiece). The
        tf.Variables behind the Keras variables are tracked, not the Keras
        variables: tracking those saves a second set of variables, and the
        SavedModel's restore op (all that TF Serving and any TF1-style
        loader run) then fills that set while the signatures read the
        other, never restored one."""
        weights = self._untracked.weights
        replaced = {id(v) for v in weights.replaced} if weights else set()
        self._variables = [variable.value for variable in self.model.variables
                           if id(variable) not in replaced]
        self._export_variables = weights.variables if weights else []

    @property
    def model(self):
        return self._untracked.model

    @property
    def tokenizer(self):
        return self._untracked.tokenizer

    @property
    def texts_source(self):
        """The raw-text inputs, as error messages name them."""
        return (("input " if len(self.text_inputs) == 1 else "inputs ")
                + ", ".join(self.text_inputs))

    @property
    def limits(self):
        """The `RequestLimits` the signatures check."""
        return self._untracked.limits

    # -- what a task supplies -----------------------------------------------

    def text_outputs(self, *texts):
        """Outputs of `serving_default` for checked tf.string [batch] texts,
        one per name in `text_inputs`."""
        raise NotImplementedError

    def token_id_outputs(self, features):
        """Outputs of `serve_token_ids` for checked encoder inputs (dict of
        int32 [batch, max_seq_length])."""
        raise NotImplementedError

    def text_input_shape(self, name):
        """The shape of the raw-text input `name`: [None] (a batch of
        texts) unless a task takes more per example (e.g. [None, choices])."""
        return [None]

    def assets(self):
        """File name -> text of the task's files that `export_saved_model`
        writes under `assets/` beside the vocabulary; none by default."""
        return {}

    def method_names(self):
        """Signature name -> the SignatureDef method name it is saved with
        where that is not TF Serving's Predict (e.g. its Classify API's);
        none by default."""
        return {}

    # -- the signatures -----------------------------------------------------

    def serve_text(self, *texts):
        """The `serving_default` computation: checks, then `text_outputs`."""
        with self._weights():
            return self.text_outputs(*self._checked_texts(texts))

    def serve_token_ids(self, input_word_ids, input_mask, input_type_ids):
        """The `serve_token_ids` computation: checks, then
        `token_id_outputs`."""
        features = self._checked_token_ids(dict(zip(
            INPUT_NAMES, (input_word_ids, input_mask, input_type_ids))))
        with self._weights():
            return self.token_id_outputs(features)

    @property
    def feed_forward_shards(self):
        """The feed-forward shards the export stores (dict block -> shards;
        None until `signatures`): what every `tfbert.inference` call in
        the signatures' functions must be given."""
        weights = self._untracked.weights
        return weights.feed_forward_shards if weights else None

    def model_outputs(self, inputs):
        """The model's outputs for its token-id `inputs` (checked encoder
        inputs, or what a task module builds from them: dict of int32
        tensors), computed by `tfbert.inference.task_outputs` with the
        export's `feed_forward_shards` (inside the signatures' functions),
        its encoder by its `CompiledEncoder` in an export made with `xla`.

        Within `signatures` the computation is one function per input
        structure (ranks and dtypes, every dimension unknown) that every
        signature calls: the model is traced, and stored, once per export
        instead of once per signature."""
        functions = self._untracked.outputs_functions
        if functions is None:
            return self._task_outputs(inputs)
        specs = {name: tf.TensorSpec([None] * tensor.shape.rank,
                                     tensor.dtype, name=name)
                 for name, tensor in inputs.items()}
        key = tuple(specs.items())
        if key not in functions:
            functions[key] = tf.function(
                self._task_outputs, autograph=False).get_concrete_function(
                    specs)
        return functions[key](inputs)

    def _task_outputs(self, inputs):
        # The weights' scope again: constant kernels must be made in the
        # graph of the function that reads them.
        with self._weights():
            return task_outputs(self.model, inputs,
                                feed_forward_shards=self.feed_forward_shards,
                                encoder=self._untracked.compiled)

    def _weights(self):
        """A scope in which the model reads its weights as the export
        stores them."""
        weights = self._untracked.weights
        return weights.scope() if weights else contextlib.nullcontext()

    def signatures(self, token_ids_only=False, constant_kernels=False,
                   feed_forward_shards=None, limits=None, xla=False):
        """Signature name -> concrete function, for `tf.saved_model.save`.

        The functions are created here, not stored on the module, so a
        token-ids-only export holds no tokenizer ops at all. They read each
        feed-forward layer as `feed_forward_shards` column shards (default
        `FEED_FORWARD_SHARDS`), or with `constant_kernels` (a bfloat16
        model only) the Dense kernels as graph constants, whole; the module
        saves those instead of the model's variables (see the module
        docstring). They refuse requests over `limits` (a `RequestLimits`;
        default `RequestLimits()`). With `xla` the encoder runs as one
        XLA-compiled function shared by every signature
        (`tfbert.inference.CompiledEncoder`, batches bucketed up to
        `limits.max_windows`); the tokenizer and the head do not.

        Raises:
          ValueError: `constant_kernels` for a model that does not compute
            in bfloat16, or kernels over `MAX_CONSTANT_BYTES`; `xla` with
            `constant_kernels`;
            `feed_forward_shards` below 1, above the intermediate size, or
            above 1 with `constant_kernels`; a function that reads a
            variable the export replaces (a `tfbert.inference` call not
            given the module's `feed_forward_shards`).
        """
        if xla and constant_kernels:
            # The compiled function is traced once, in the first
            # signature's graph: constants made there belong to it.
            raise ValueError("xla exports keep their kernels as variables "
                             "(not constant_kernels)")
        self._untracked.limits = limits or RequestLimits()
        self._untracked.weights = _ExportWeights(
            self.model, constant_kernels, feed_forward_shards)
        self._untracked.outputs_functions = {}
        self._track_variables()
        self._untracked.compiled = CompiledEncoder(
            self.model.encoder, self.feed_forward_shards, self.max_seq_length,
            self.limits.max_windows) if xla else None
        id_specs = [tf.TensorSpec([None, self.max_seq_length], tf.int32,
                                  name=name) for name in INPUT_NAMES]
        token_ids = tf.function(self.serve_token_ids, input_signature=id_specs,
                                autograph=False)
        signatures = {TOKEN_IDS_SIGNATURE: token_ids.get_concrete_function()}
        if not token_ids_only:
            text_specs = [tf.TensorSpec(self.text_input_shape(name),
                                        tf.string, name=name)
                          for name in self.text_inputs]
            text = tf.function(self.serve_text, input_signature=text_specs,
                               autograph=False)
            signatures[TEXT_SIGNATURE] = text.get_concrete_function()
        replaced = {id(v.value): v.path
                    for v in self._untracked.weights.replaced}
        for name, function in signatures.items():
            read = sorted(replaced[id(v)] for v in function.graph.variables
                          if id(v) in replaced)
            if read:
                raise ValueError(
                    f"{type(self).__name__}'s {name} reads {read}, which the "
                    "export replaces: pass the module's feed_forward_shards "
                    "to tfbert.inference")
        return signatures

    def warmup_inputs(self, token_ids_only=False):
        """Signature name -> {input name: numpy array}: one small request per
        signature, for TF Serving's warmup file; in an export made with
        `xla`, `serve_token_ids` gets a list of requests instead, one of
        each bucket shape of its `CompiledEncoder`, so the server compiles
        them all while it loads."""
        compiled = self._untracked.compiled
        shapes = compiled.warmup_shapes() if compiled else [(1, 2)]
        requests = []
        for batch, length in shapes:
            ids = np.zeros([batch, self.max_seq_length], np.int32)
            ids[:, :length] = self.tokenizer.cls_id
            ids[:, length - 1] = self.tokenizer.sep_id
            mask = (np.arange(self.max_seq_length) < length).astype(
                np.int32)[None].repeat(batch, 0)
            requests.append(dict(zip(INPUT_NAMES,
                                     (ids, mask, np.zeros_like(ids)))))
        inputs = {TOKEN_IDS_SIGNATURE: requests if compiled else requests[0]}
        if not token_ids_only:
            inputs[TEXT_SIGNATURE] = {
                name: np.full([1, *self.text_input_shape(name)[1:]],
                              b"The warm-up request.")
                for name in self.text_inputs}
        return inputs

    # -- input checks ---------------------------------------------------------

    def _checked_texts(self, texts):
        """The text inputs once checked, in order: shapes, then the
        character bounds and the number of examples, then UTF-8 and equal
        batch sizes (each step runs only on inputs that passed the one
        before)."""
        texts = _after([_shape_check(name, text, self.text_input_shape(name),
                                     "string")
                        for name, text in zip(self.text_inputs, texts)],
                       texts)
        limits = self.limits
        checks, total = [], tf.constant(0, tf.int64)
        for name, text in zip(self.text_inputs, texts):
            length = tf.strings.length(text, unit="UTF8_CHAR")
            too_long = length > limits.max_text_chars
            checks.append(tf.debugging.Assert(~tf.reduce_any(too_long), [
                f"input {name} has a text over the bound of "
                f"{limits.max_text_chars} characters per text "
                "(max_text_chars) at batch index", tf.where(too_long)[:1, 0],
                "of", tf.boolean_mask(length, too_long)[:1], "characters"]))
            total += tf.reduce_sum(tf.cast(length, tf.int64))
        checks.append(tf.debugging.Assert(
            total <= limits.max_batch_chars, [
                f"{self.texts_source}: the request holds", total,
                "characters, over the bound of "
                f"{limits.max_batch_chars} characters per request "
                "(max_batch_chars)"]))
        # Every example needs a window (NER's empty texts none, but they
        # still cost per-example work).
        checks.append(tf.debugging.Assert(
            tf.size(texts[0]) <= limits.max_windows, [
                f"{self.texts_source}: the request holds", tf.size(texts[0]),
                f"examples, over the bound of {limits.max_windows} windows "
                "per request (max_windows; each example counts as one at "
                "least)"]))
        texts = _after(checks, texts)
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
                tf.shape(texts[0])[0], tf.shape(text)[0], message=(
                    f"inputs {first} and {name} must have the same "
                    "batch size")))
        return _after(checks, texts)

    def _checked_token_ids(self, features):
        features = dict(zip(features, _after(
            [_shape_check(name, value, [None, self.max_seq_length], "int32")
             for name, value in features.items()], features.values())))
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
        checked = dict(zip(features, _after(checks, features.values())))
        return self.windows_checked(checked, "input input_word_ids rows")

    def windows_checked(self, features, source):
        """`features` (encoder inputs, dict of int32 [windows, seq]) once
        their number of windows is checked against `limits.max_windows`;
        `source` names the input(s) that made them (`texts_source`)."""
        windows = tf.shape(features["input_word_ids"])[0]
        bound = self.limits.max_windows
        check = tf.debugging.Assert(windows <= bound, [
            f"{source}: the request needs", windows, "encoder windows, over "
            f"the bound of {bound} windows per request "
            "(max_windows)"])
        return dict(zip(features, _after([check], features.values())))


def _after(checks, tensors):
    """`tensors` (a list) as identities that run only after `checks`."""
    with tf.control_dependencies(checks):
        return [tf.identity(tensor) for tensor in tensors]


def _shape_check(name, tensor, expected, dtype):
    """An assertion that `tensor`, the signature input `name`, has the
    shape `expected` (a list, None = any size).

    The rank is read from a shape vector whose length the graph cannot
    infer: a signature input has its spec's static shape, and Grappler
    folds `tf.rank` (or the size of `tf.shape`) of it to that constant,
    while a runtime may feed whatever shape the client sent (the
    signatures of `tf.saved_model.load` do).
    """
    shape = tf.shape(tensor)
    # Where's output length is known only at run time (`boolean_mask`
    # would reshape to the static length, and fail on another rank).
    shape = tf.gather(shape, tf.where(shape >= 0)[:, 0])
    matches = tf.equal(tf.size(shape), len(expected))
    padded = tf.pad(shape, [[0, len(expected)]])[:len(expected)]
    for axis, size in enumerate(expected):
        if size is not None:
            matches &= tf.equal(padded[axis], size)
    spelled = ", ".join("batch" if size is None else str(size)
                        for size in expected)
    return tf.debugging.Assert(matches, [
        f"input {name} must be {dtype} [{spelled}], got shape", shape])


def _transformer_blocks(model):
    """The model's transformer blocks, each once, in layer order."""
    return list({id(layer): layer for layer in model._flatten_layers()
                 if isinstance(layer, TransformerBlock)}.values())


def exported_weights(model, reader):
    """The values of `model.variables`, in order, read back from an export.

    What `ServingModule` saves in place of the model (see `_ExportWeights`):
    `_variables`, the model's variables in `model.variables` order less any
    sharded feed-forward kernels and inner biases; then `_export_variables`,
    the shards, block by block and shard by shard, (inner kernel, inner
    bias, outer kernel) each. Sharded weights come back whole.

    Args:
      model: a model of the exported one's architecture (its own values are
        not read).
      reader: a `tf.train.CheckpointReader` of the SavedModel's
        `variables/variables`.

    Returns:
      numpy arrays, one per variable of `model`.

    Raises:
      ValueError: the checkpoint does not hold `model`'s weights (another
        architecture, or an export with its kernels as graph constants).
    """
    def read(name, index):
        return reader.get_tensor(f"{name}/{index}/.ATTRIBUTES/VARIABLE_VALUE")

    keys = reader.get_variable_to_shape_map()

    def count(name):
        return sum(1 for key in keys if key.startswith(f"{name}/")
                   and key.endswith("/.ATTRIBUTES/VARIABLE_VALUE"))

    blocks = _transformer_blocks(model)
    num_shards = count("_export_variables") // (3 * len(blocks))
    whole = {}
    for b, block in enumerate(blocks):
        shards = [[read("_export_variables", 3 * (b * num_shards + i) + j)
                   for j in range(3)] for i in range(num_shards)]
        if shards:
            inner, bias, outer = (np.concatenate(parts, axis=axis)
                                  for parts, axis in zip(zip(*shards),
                                                         (1, 0, 0)))
            whole[id(block.intermediate_dense.kernel)] = inner
            whole[id(block.intermediate_dense.bias)] = bias
            whole[id(block.output_dense.kernel)] = outer
    stored = [v for v in model.variables if id(v) not in whole]
    num_stored = count("_variables")
    if num_stored != len(stored):
        raise ValueError(
            f"the export holds {num_stored} variables besides "
            f"feed-forward shards; {type(model).__name__} has {len(stored)}")
    values = (read("_variables", i) for i in range(num_stored))
    result = [whole[id(v)] if id(v) in whole else next(values)
              for v in model.variables]
    for variable, value in zip(model.variables, result):
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{variable.path}: shape {tuple(variable.shape)}, the export "
                f"holds {tuple(value.shape)}")
    return result


class _ExportWeights:
    """How an export stores a model's weights, and the scope in which the
    model reads them so (see the module docstring).

    Each transformer block's feed-forward kernels and inner bias become
    `feed_forward_shards` column shards (variables; 1 keeps them whole;
    default `FEED_FORWARD_SHARDS`).
    With `constant_kernels` every Dense kernel is instead a graph constant,
    made by one input-less tf.function, whole (there shards measured
    slower at batch 32 and no faster at batch 1: benchmarks/RESULTS.md);
    the other weights stay variables.

    Attributes:
      replaced: the model's Keras variables the export does not save.
      variables: the tf.Variables it saves in their place.
      feed_forward_shards: dict block -> its shards (variables), for
        `tfbert.inference.EncoderInference`; empty when kept whole.

    Raises:
      ValueError: `constant_kernels` for a model that does not compute in
        bfloat16, or kernels over `MAX_CONSTANT_BYTES`;
        `feed_forward_shards` below 1, above the intermediate size, or above
        1 with `constant_kernels`.
    """

    def __init__(self, model, constant_kernels, feed_forward_shards=None):
        if feed_forward_shards is None:
            feed_forward_shards = 1 if constant_kernels else FEED_FORWARD_SHARDS
        if constant_kernels and feed_forward_shards != 1:
            raise ValueError(
                f"feed_forward_shards={feed_forward_shards}: constant kernels "
                "stay whole (1)")
        self._kernels, self._constants = [], None
        self.feed_forward_shards = {}
        self.variables, self.replaced = [], []
        if constant_kernels:
            self._keep_kernels_constant(model)
            self.replaced = list(self._kernels)
            return
        if feed_forward_shards == 1:
            return
        blocks = _transformer_blocks(model)
        self.replaced = [weight for block in blocks for weight in (
            block.intermediate_dense.kernel, block.intermediate_dense.bias,
            block.output_dense.kernel)]
        for block in blocks:
            self.feed_forward_shards[block] = [
                tuple(tf.Variable(array, trainable=False,
                                  name=f"{block.name}/{name}_shard_{i}")
                      for name, array in (("intermediate/kernel", inner),
                                          ("intermediate/bias", bias),
                                          ("output/kernel", outer)))
                for i, (inner, bias, outer) in enumerate(
                    column_shards(block, feed_forward_shards))]
            self.variables += [v for shard in self.feed_forward_shards[block]
                               for v in shard]

    def _keep_kernels_constant(self, model):
        if model.compute_dtype != "bfloat16":
            raise ValueError(
                "constant kernels are for bfloat16 exports (float32 kernels "
                "as constants made batch-1 latency worse); "
                f"{type(model).__name__} computes in {model.compute_dtype}")
        self._kernels = [v for v in model.variables if v.name == "kernel"]
        size = sum(math.prod(v.shape) * tf.as_dtype(v.dtype).size
                   for v in self._kernels)
        if size > MAX_CONSTANT_BYTES:
            raise ValueError(
                f"{type(model).__name__}'s kernels take {size / 1e9:.2f} GB, "
                f"over the {MAX_CONSTANT_BYTES / 1e9:.1f} GB a SavedModel "
                "graph can hold as constants; export them as variables")
        values = [keras.ops.convert_to_numpy(v) for v in self._kernels]

        # Created in the function's graph (a constant captured from outside
        # reaches a function restored by `tf.saved_model.load` as an input).
        @tf.function(input_signature=[], autograph=False)
        def constants():
            return [tf.constant(value) for value in values]

        self._constants = constants

    def scope(self):
        """Inside the signatures' functions: the model reads its kernels as
        stored here (its feed-forward layers read `feed_forward_shards`
        through `ServingModule.model_outputs`)."""
        if self._constants is None:
            return contextlib.nullcontext()
        return keras.StatelessScope(state_mapping=list(
            zip(self._kernels, self._constants())))
