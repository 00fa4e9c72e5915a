"""The models' one way to `tfbert.checkpoints`, imported on first use.

The checkpoint readers build models and import TensorFlow and the
tokenizers; the numeric models (layers, encoders, heads) import neither, so
that they run on any Keras backend. Every model's `from_pretrained` and
`save_pretrained` reach the readers and writers through `checkpoints()`.
"""


def checkpoints():
    """The `tfbert.checkpoints` package."""
    import tfbert.checkpoints

    return tfbert.checkpoints
