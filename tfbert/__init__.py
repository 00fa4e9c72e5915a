"""tfbert: BERT for Keras 3 and TensorFlow.

Importing `tfbert` registers every tfbert Keras class (layers, models,
optimizers, schedules, metrics, losses) under the package name "tfbert", so
`keras.models.load_model("model.keras")` restores a saved tfbert model in a
new process once `tfbert` is imported. Optional dependencies (keras-hub,
safetensors, torch, transformers) are imported only by the functions that
read or write their formats. TensorFlow's start-up notices are kept off the
terminal (`tfbert.utils.quiet`).
"""

from tfbert.utils.quiet import quiet_tensorflow_start

with quiet_tensorflow_start():
    import tensorflow  # noqa: F401

from tfbert import metrics, training  # noqa: E402
from tfbert.config import BertConfig
from tfbert.metrics import masked_lm as _masked_lm  # Keras registration.
from tfbert.models import (
    AlbertEncoder, BertClassifier, BertEncoder, BertPretrainer,
    BertSpanLabeler, BertTextClassifier, BertTokenClassifier,
    DistilBertEncoder, ElectraEncoder, Encoder, MaskedLMPretrainer,
    RobertaEncoder, SequenceClassifier, SpanLabeler, TextClassifier,
    TokenClassifier)
from tfbert.presets import PRESETS
from tfbert.sentence_encoder import SentenceEncoder
from tfbert.text import BertPreprocessor, BertTokenizer, Preprocessor

__version__ = "0.1.0"

__all__ = ["BertConfig", "BertEncoder", "BertTokenizer", "BertPreprocessor",
           "Preprocessor", "SentenceEncoder", "SequenceClassifier",
           "TextClassifier", "SpanLabeler", "TokenClassifier",
           "MaskedLMPretrainer", "PRESETS", "metrics", "training",
           "__version__", "Encoder", "DistilBertEncoder", "ElectraEncoder",
           "RobertaEncoder", "AlbertEncoder",
           # The task models' former names.
           "BertClassifier", "BertTextClassifier", "BertSpanLabeler",
           "BertTokenClassifier", "BertPretrainer"]
