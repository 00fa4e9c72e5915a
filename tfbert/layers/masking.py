"""The additive mask that hides padding from softmaxes and argmaxes."""

from keras import ops

# Added to the logits of padding positions (attention keys, answer
# boundaries). Logits there are float32, so exp() of this underflows to
# exactly 0 and no real logit comes near it.
MASKED_LOGIT = -1e9


def padding_bias(mask):
    """`MASKED_LOGIT` where `mask` is 0 and 0.0 where it is 1.

    Args:
      mask: int or bool [batch, seq]; 1 for real tokens, 0 for padding.

    Returns:
      float32 [batch, seq], to add to float32 logits over the seq axis.
    """
    return (1.0 - ops.cast(mask, "float32")) * MASKED_LOGIT
