"""`CompiledEncoder`: `EncoderInference` as one XLA-compiled function, its
inputs padded to a few bucket shapes."""

import tensorflow as tf

from tfbert.inference.encoder import EncoderInference
from tfbert.inference.token_packing import padded_to, trailing_padding_removed

# The shortest sequence bucket: shorter requests are padded to it.
SMALLEST_SEQ_BUCKET = 16


def size_buckets(largest, smallest=1):
    """Powers of two from `smallest` below `largest`, then `largest`."""
    buckets, size = [], smallest
    while size < largest:
        buckets.append(size)
        size *= 2
    return buckets + [largest]


def _bucket(buckets, size):
    """The smallest of `buckets` (a sorted list) >= int32 scalar `size`,
    or `size` itself above the largest."""
    table = tf.constant(buckets, tf.int32)
    index = tf.searchsorted(table, size[None], side="left")[0]
    return tf.maximum(tf.gather(table, tf.minimum(index, len(buckets) - 1)),
                      size)


class CompiledEncoder:
    """The outputs of `EncoderInference(encoder, feed_forward_shards)`,
    computed by one `jit_compile=True` function: XLA fuses the encoder's
    graph into a few kernels, so a small request pays far fewer op
    dispatches. XLA compiles per input shape, so the inputs (trailing
    padding cut off) are padded to a bucket: batch to the next of
    `batch_buckets`, sequence to the next of `seq_buckets`; the function
    runs every position (no packing) and the outputs are cut back. A
    server compiles each bucket pair once (`warmup_shapes` lists them for
    the warmup requests); a batch above the largest bucket compiles its
    own shape.

    One object serves every signature of an export: its function is traced
    once, so the signatures share one compiled kernel per shape.

    Args:
      encoder: a built `BertEncoder`.
      feed_forward_shards: see `EncoderInference`.
      max_seq_length: the longest sequence (the largest seq bucket).
      max_batch: the largest batch bucket (e.g. the export's
        `RequestLimits.max_windows`).
    """

    def __init__(self, encoder, feed_forward_shards, max_seq_length,
                 max_batch):
        self._inference = EncoderInference(encoder, feed_forward_shards)
        self.seq_buckets = size_buckets(
            max_seq_length, min(SMALLEST_SEQ_BUCKET, max_seq_length))
        self.batch_buckets = size_buckets(max_batch)
        self._functions = {}

    def warmup_shapes(self):
        """(batch, seq) of every bucket pair, smallest first."""
        return [(batch, seq) for batch in self.batch_buckets
                for seq in self.seq_buckets]

    def _function(self, first_token_only, names):
        """The compiled function of `names` (the input dict's keys, in
        order) -> `EncoderInference` outputs."""
        key = first_token_only, names
        if key not in self._functions:
            def compute(*values):
                inputs = dict(zip(names, values))
                outputs = self._inference(
                    inputs, first_token_only=first_token_only, pack=False)
                if not first_token_only:
                    # Padding positions hold zeros, as packed outputs do.
                    outputs["sequence_output"] *= tf.cast(
                        inputs["input_mask"][:, :, None],
                        outputs["sequence_output"].dtype)
                return outputs

            specs = [tf.TensorSpec([None, None], tf.int32, name=name)
                     for name in names]
            self._functions[key] = tf.function(
                compute, input_signature=specs, autograph=False,
                jit_compile=True)
        return self._functions[key]

    def __call__(self, inputs, first_token_only=False):
        """`EncoderInference.__call__(inputs, first_token_only)`: dict of
        int32 [batch, seq] encoder inputs -> `sequence_output` float32
        [batch, seq, H] ([batch, 1, H] with `first_token_only`) and, with a
        pooler, `pooled_output` [batch, H]."""
        seq = tf.shape(inputs["input_mask"])[1]
        cut = trailing_padding_removed(
            {name: tf.cast(value, tf.int32) for name, value in inputs.items()})
        batch, length = tf.unstack(tf.shape(cut["input_mask"]))
        padding = [[0, _bucket(self.batch_buckets, batch) - batch],
                   [0, _bucket(self.seq_buckets, length) - length]]
        outputs = self._function(first_token_only, tuple(cut))(
            *(tf.pad(value, padding) for value in cut.values()))
        sequence = outputs["sequence_output"][:batch]
        if not first_token_only:
            sequence = padded_to(sequence[:, :length], seq)
        result = {"sequence_output": sequence}
        if "pooled_output" in outputs:
            result["pooled_output"] = outputs["pooled_output"][:batch]
        return result
