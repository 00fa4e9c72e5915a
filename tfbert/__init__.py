"""tfbert: BERT for Keras 3 and TensorFlow.

Importing `tfbert` registers every tfbert Keras class (layers, models,
optimizers, schedules, metrics, losses) under the package name "tfbert", so
`keras.models.load_model("model.keras")` restores a saved tfbert model in a
new process once `tfbert` is imported. Optional dependencies (keras-hub,
safetensors, torch, transformers) are imported only by the functions that
read or write their formats.

`import tfbert` writes nothing to stderr: TensorFlow's import and the start
of its device platform (where a machine without a GPU reports its failed
cuInit) run inside `tfbert.quiet_tensorflow_start()`, which silences native
stderr unless TF_CPP_MIN_LOG_LEVEL is 0 or 1. Wrap other TensorFlow start-up
code in it the same way (`with tfbert.quiet_tensorflow_start(): ...`).
"""

from tfbert.utils.quiet import quiet_tensorflow_start

with quiet_tensorflow_start():
    import tensorflow
    tensorflow.config.list_physical_devices()

from tfbert import export, losses, metrics, search, training  # noqa: E402
from tfbert.config import BertConfig
from tfbert.feature_extractor import FeatureExtractor
from tfbert.fill_mask import MaskFiller
from tfbert.metrics import masked_lm as _masked_lm  # Keras registration.
from tfbert.models import (
    AlbertEncoder, BertClassifier, BertEncoder, BertPretrainer,
    BertSpanLabeler, BertTextClassifier, BertTokenClassifier,
    DistilBertEncoder, ElectraEncoder, Encoder, MaskedLMPretrainer,
    MultipleChoiceClassifier, RobertaEncoder, SentenceEncoder,
    SequenceClassifier, SpanLabeler, TextClassifier, TokenClassifier)
from tfbert.presets import PRESETS
from tfbert.text import BertPreprocessor, BertTokenizer, Preprocessor

__version__ = "0.1.0"

__all__ = ["BertConfig", "BertEncoder", "BertTokenizer", "BertPreprocessor",
           "Preprocessor", "SentenceEncoder", "SequenceClassifier",
           "TextClassifier", "SpanLabeler", "TokenClassifier",
           "MaskedLMPretrainer", "MultipleChoiceClassifier",
           "FeatureExtractor", "MaskFiller", "PRESETS", "export", "losses",
           "metrics", "search", "training", "__version__", "Encoder", "DistilBertEncoder", "ElectraEncoder",
           "RobertaEncoder", "AlbertEncoder", "quiet_tensorflow_start",
           # The task models' former names.
           "BertClassifier", "BertTextClassifier", "BertSpanLabeler",
           "BertTokenClassifier", "BertPretrainer"]
