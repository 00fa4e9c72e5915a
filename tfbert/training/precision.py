"""Mixed-precision policies."""

import keras

POLICIES = {"none": "float32", "float16": "mixed_float16",
            "bfloat16": "mixed_bfloat16"}


def set_mixed_precision(name):
    """Sets the global Keras dtype policy from a `--mixed_precision` value:
    "none" (float32), "float16" or "bfloat16".

    Call before building models. Under "float16", `Model.compile` wraps the
    optimizer in a `LossScaleOptimizer` (dynamic loss scaling). LayerNorm,
    softmax and logits stay float32 in tfbert's layers under every policy.
    """
    try:
        policy = POLICIES[name]
    except KeyError:
        raise ValueError(f"mixed_precision must be one of {sorted(POLICIES)}, "
                         f"got {name!r}") from None
    keras.mixed_precision.set_global_policy(policy)
    return policy
