"""Identical dropout masks in tfbert and HF PyTorch, for controlled training
comparisons (`benchmarks/squad_same_batches.py --shared_masks`).

Every dropout site of the encoder (and of a task head) gets a number, the
same in both frameworks: 0 for the embeddings, `1 + 3 i` / `2 + 3 i` /
`3 + 3 i` for the attention probabilities, the attention output and the
feed-forward output of block i, and `HEAD_SITE` for a head's dropout. The
n-th training-mode call of a site multiplies its input by

    keep / (1 - rate),  keep = default_rng([seed, site, n]).random(shape) >= rate

computed with NumPy, so both frameworks draw the same masks in the same
order. Keras's own dropout (and torch's) are bypassed; what this isolates is
everything else the frameworks do while training with dropout.
"""

import numpy as np

HEAD_SITE = 1000


def dropout_mask(seed, site, call, shape, rate):
    """float32 mask of `shape`: 0 where dropped, 1 / (1 - rate) elsewhere."""
    keep = np.random.default_rng([seed, site, call]).random(
        tuple(shape), dtype=np.float32) >= rate
    return keep.astype(np.float32) / np.float32(1.0 - rate)


class _Counter:
    """The masks of one site, drawn call after call."""

    def __init__(self, seed, site, rate):
        self.seed, self.site, self.rate, self.calls = seed, site, rate, 0

    def __call__(self, shape):
        mask = dropout_mask(self.seed, self.site, self.calls, shape, self.rate)
        self.calls += 1
        return mask


def install_keras(encoder, seed, head_dropout=None):
    """Replaces the `call` of every Dropout layer of a tfbert `BertEncoder`
    (and `head_dropout`, a head's Dropout layer) by the shared masks.
    Returns the number of sites."""
    import tensorflow as tf

    layers = [(0, encoder.embeddings.dropout_layer)]
    for i, block in enumerate(encoder.transformer_blocks):
        layers += [(1 + 3 * i, block.attention.dropout_layer),
                   (2 + 3 * i, block.attention_output_dropout_layer),
                   (3 + 3 * i, block.output_dropout_layer)]
    if head_dropout is not None:
        layers.append((HEAD_SITE, head_dropout))

    for site, layer in layers:
        counter = _Counter(seed, site, layer.rate)

        def call(inputs, training=None, counter=counter):
            if not training or counter.rate == 0:
                return inputs
            mask = tf.numpy_function(counter, [tf.shape(inputs)], tf.float32,
                                     stateful=True)
            mask.set_shape(inputs.shape)
            return inputs * tf.cast(mask, inputs.dtype)

        layer.call = call
    return len(layers)


def _torch_dropout(seed, site, rate):
    """A stand-in for a `torch.nn.Dropout` that draws the shared masks."""
    import torch

    class SharedMaskDropout(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = rate
            self.counter = _Counter(seed, site, rate)

        def forward(self, inputs):
            if not self.training or self.p == 0:
                return inputs
            mask = self.counter(tuple(inputs.shape))
            return inputs * torch.from_numpy(mask).to(inputs.dtype)

    return SharedMaskDropout()


def install_torch(model, seed, head_attribute=None):
    """Gives an HF `Bert*` PyTorch model the shared masks: its dropout
    modules are replaced, and it is switched to eager attention, whose
    function draws the attention probabilities' masks. `head_attribute`
    names the head's dropout module on `model`, if any. Returns the number
    of sites."""
    import torch
    from transformers.models.bert import modeling_bert

    # SDPA attention applies its dropout inside the fused kernel.
    model.set_attn_implementation("eager")
    bert = model.bert
    bert.embeddings.dropout = _torch_dropout(
        seed, 0, bert.embeddings.dropout.p)
    sites = 1
    attention_masks = {}
    for i, layer in enumerate(bert.encoder.layer):
        layer.attention.output.dropout = _torch_dropout(
            seed, 2 + 3 * i, layer.attention.output.dropout.p)
        layer.output.dropout = _torch_dropout(
            seed, 3 + 3 * i, layer.output.dropout.p)
        self_attention = layer.attention.self
        if self_attention.layer_idx != i:
            raise ValueError(f"block {i} has layer_idx {self_attention.layer_idx}")
        attention_masks[i] = _Counter(seed, 1 + 3 * i,
                                      self_attention.dropout.p)
        sites += 3
    if head_attribute:
        setattr(model, head_attribute, _torch_dropout(
            seed, HEAD_SITE, getattr(model, head_attribute).p))
        sites += 1

    def eager_attention(module, query, key, value, attention_mask,
                        scaling=None, dropout=0.0, **kwargs):
        scaling = query.size(-1) ** -0.5 if scaling is None else scaling
        scores = torch.matmul(query, key.transpose(2, 3)) * scaling
        if attention_mask is not None:
            scores = scores + attention_mask
        probs = torch.nn.functional.softmax(scores, dim=-1)
        if module.training and dropout > 0:
            mask = attention_masks[module.layer_idx](tuple(probs.shape))
            probs = probs * torch.from_numpy(mask).to(probs.dtype)
        output = torch.matmul(probs, value).transpose(1, 2).contiguous()
        return output, probs

    modeling_bert.eager_attention_forward = eager_attention
    return sites
