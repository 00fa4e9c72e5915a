"""`.keras` files (`model.save("x.keras")`): telling and loading them.

What a file holds is read by those who need it: the encoder's weights by
`tfbert.checkpoints.keras_file`, the tokenizer by `tfbert.text`.
"""

import os

import keras


def is_keras_file(path):
    """Whether `path` names a `.keras` file."""
    return str(path).endswith(".keras") and os.path.isfile(path)


def load_keras_file(path):
    """The model saved in `path`, uncompiled (tfbert's classes are
    registered by `import tfbert`).

    Raises:
      ValueError: the file does not load, naming it.
    """
    try:
        return keras.saving.load_model(path, compile=False)
    except (ValueError, TypeError, OSError) as error:
        raise ValueError(f"{path}: not a loadable tfbert .keras file "
                         f"({' '.join(str(error).split())[:300]})") from error


def tokenizer_of(model):
    """The tokenizer a saved model holds (a raw-text model's preprocessor's),
    or None."""
    return getattr(getattr(model, "preprocessor", None), "tokenizer", None)
