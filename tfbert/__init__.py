"""tfbert: BERT for Keras 3 and TensorFlow."""

from tfbert.config import BertConfig
from tfbert.models import (
    BertClassifier, BertEncoder, BertPretrainer, BertSpanLabeler,
    BertTokenClassifier)
from tfbert.presets import PRESETS
from tfbert.sentence_encoder import SentenceEncoder
from tfbert.text import BertPreprocessor, BertTokenizer, Preprocessor

__version__ = "0.1.0"

__all__ = ["BertConfig", "BertEncoder", "BertTokenizer", "BertPreprocessor",
           "Preprocessor", "SentenceEncoder", "BertClassifier", "BertSpanLabeler",
           "BertTokenClassifier", "BertPretrainer", "PRESETS", "__version__"]
