"""Inference on a padded batch's real tokens only: `TokenPacking` and
`trailing_padding_removed`."""

import tensorflow as tf
from keras import ops


def _take_rows(x, rows):
    """`x[rows]` for int32 `rows` in [0, len(x)), as a bare GatherV2:
    `ops.take` adds four ops per gather to wrap negative indices, which
    these never are (~100 ops in a MiniLM call)."""
    return tf.gather(x, rows)


def trailing_padding_removed(inputs):
    """`inputs` without the columns after the batch's last real token.

    `serve_token_ids` clients pad every request to the export's
    `max_seq_length` (TF Serving's batching needs a fixed length), so a
    batch of short sentences arrives as mostly padding columns. Nothing of
    a real token depends on a padding column to its right (padding keys
    get no attention), so the encoder can run on the cut batch and pad its
    output back (`padded_to`).

    Args:
      inputs: dict of int [batch, seq] encoder inputs with "input_mask".

    Returns:
      The same dict with every tensor cut to [batch, length], `length` the
      last position where any row's mask is nonzero, plus one (at least 1).
    """
    mask = inputs["input_mask"]
    columns = ops.arange(ops.shape(mask)[1])[None, :]
    length = ops.max(ops.where(mask != 0, columns, 0)) + 1
    return {name: value[:, :length] for name, value in inputs.items()}


def padded_to(x, seq):
    """[batch, length, ...] -> [batch, seq, ...], zeros after `length`."""
    tail = tuple(x.shape[2:])
    widths = [[0, 0], [0, seq - ops.shape(x)[1]]] + [[0, 0]] * len(tail)
    return ops.reshape(ops.pad(x, widths), (-1, seq, *tail))


class TokenPacking:
    """Where the real tokens of a padded batch are, to gather
    [batch, seq, ...] tensors into [tokens, ...] and back.

    A transformer block's position-wise work (the dense projections, the
    activation, LayerNorm, residual adds) costs the same for every row, so
    in a batch padded to its longest row that share of the time goes to
    padding in proportion: at batch 32, SST-2's dev sentences are 48 %
    padding. On packed rows that work is done for real tokens only;
    attention, which needs the [batch, heads, seq] layout for its masked
    softmax, spreads its keys, values and queries out to it and packs its
    output again (`spread_heads`, `pack_heads`, see
    `tfbert.inference.attention`).

    Position 0 of every row is kept even where the mask is 0, so each row
    has a first token to read (`first_tokens`). The index computation has a
    data-dependent size: for inference graphs, eager code and TensorFlow
    `tf.function`s, not XLA.

    Args:
      mask: int or bool [batch, seq]; 1 for real tokens, 0 for padding.
    """

    def __init__(self, mask):
        shape = ops.shape(mask)
        self.batch, self.seq = shape[0], shape[1]
        keep = ops.logical_or(ops.cast(mask, "bool"),
                              ops.arange(self.seq)[None, :] == 0)
        self._keep = ops.reshape(keep, (-1,))
        # int32 [tokens]: row-major positions in the flattened batch.
        self.positions = ops.nonzero(self._keep)[0]
        # int32 [batch * seq]: each position's row in the packing or, where
        # dropped, the row of the last kept position before it (position 0
        # is always kept, so that one lies in the same batch row).
        self._rows = ops.cumsum(ops.cast(self._keep, "int32")) - 1
        # int32 [batch]: where each row's position 0 lies in the packing.
        self.first_positions = _take_rows(
            self._rows, ops.arange(self.batch) * self.seq)
        self._per_call = {}

    def pack(self, x):
        """[batch, seq, ...] -> [tokens, ...], the kept positions in order."""
        rows = ops.reshape(x, (-1, *x.shape[2:]))
        return _take_rows(rows, self.positions)

    def unpack(self, x):
        """[tokens, ...] -> [batch, seq, ...], zeros at dropped positions."""
        # Dropped positions read an appended zero row.
        padded = ops.pad(x, [[0, 1]] + [[0, 0]] * (len(x.shape) - 1))
        rows = ops.where(self._keep, self._rows, ops.shape(x)[0])
        return self._batched(_take_rows(padded, rows))

    def spread_heads(self, x, num_heads):
        """[tokens, N * head] -> [batch, N, seq, head] for attention: the
        heads split out by one gather, without a transpose. Kept positions
        hold their rows, dropped positions a copy of the last kept row
        before them. Dropped positions are masked, so their keys get
        exactly zero attention weight (float32 softmax with a -1e9 bias)
        wherever a row has a real token, and their queries' outputs are
        dropped by `pack_heads`: what they hold is never used."""
        head = x.shape[-1] // num_heads
        rows = ops.reshape(x, (-1, head))  # [tokens * N, head]
        return _take_rows(rows, self._head_index(num_heads)[0])

    def pack_heads(self, x):
        """[batch, N, seq, head] -> [tokens, N * head]: `pack` of the
        heads merged back, by one gather."""
        num_heads, head = x.shape[1], x.shape[-1]
        rows = ops.reshape(x, (-1, head))  # [batch * N * seq, head]
        packed = _take_rows(rows, self._head_index(num_heads)[1])
        return ops.reshape(packed, (-1, num_heads * head))

    def _head_index(self, num_heads):
        """int32 ([batch, N, seq], [tokens, N]): for `spread_heads`, each
        position's row in the packing split into N rows per token; for
        `pack_heads`, each kept position's rows in [batch, N, seq]
        flattened. Computed once per call and shared by every block."""
        def compute():
            heads = ops.arange(num_heads, dtype="int32")
            rows = ops.reshape(self._rows, (self.batch, 1, self.seq))
            spread = rows * num_heads + heads[None, :, None]
            batch_row = self.positions // self.seq
            column = self.positions - batch_row * self.seq
            pack = ((batch_row * num_heads)[:, None] + heads[None, :]) \
                * self.seq + column[:, None]
            return spread, pack
        return self.per_call(("head indices", num_heads), compute)

    def per_call(self, key, compute):
        """`compute()`, computed once for this packing (one call of the
        encoder) per `key` and shared by every block that asks for it."""
        if key not in self._per_call:
            self._per_call[key] = compute()
        return self._per_call[key]

    def _batched(self, rows):
        return ops.reshape(rows, (self.batch, self.seq, *rows.shape[1:]))

    def first_tokens(self, x):
        """[tokens, ...] -> [batch, 1, ...]: each row's position 0."""
        return _take_rows(x, self.first_positions)[:, None]
