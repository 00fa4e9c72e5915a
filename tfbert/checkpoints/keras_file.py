"""`.keras` files (`model.save("x.keras")`) read as checkpoints.

Any saved tfbert model that holds a BERT encoder is a checkpoint of that
encoder: a `BertEncoder` itself, a task model with an `encoder` attribute
(`BertClassifier`, `BertSpanLabeler`, `BertTokenClassifier`,
`BertPretrainer`), or a `BertTextClassifier`, whose file also holds its
tokenizer.
"""

from tfbert.checkpoints.variable_map import encoder_variables, read_variables
from tfbert.models.bert_encoder import BertEncoder
from tfbert.utils.keras_file import (is_keras_file, load_keras_file,
                                     tokenizer_of)

__all__ = ["is_keras_file", "read_keras_file"]


def _encoder_of(model, path):
    if isinstance(model, BertEncoder):
        encoder = model
    elif hasattr(model, "classifier"):
        encoder = model.classifier.encoder
    else:
        encoder = getattr(model, "encoder", None)
    if type(encoder) is not BertEncoder:
        raise ValueError(
            f"{path}: a {type(model).__name__} without a BERT encoder; save "
            "a family encoder with save_pretrained and pass that directory")
    return encoder


def read_keras_file(path):
    """`(config, weights, tokenizer)` of the encoder in a `.keras` file:
    its `BertConfig`, canonical weights (see `variable_map`) and the
    model's `BertTokenizer` (None when the model holds none).

    Raises:
      ValueError: the file does not load, or holds no BERT encoder.
    """
    model = load_keras_file(path)
    encoder = _encoder_of(model, path)
    return (encoder.config, read_variables(encoder_variables(encoder)),
            tokenizer_of(model))
