"""tfbert: BERT for Keras 3 and TensorFlow."""

from tfbert.config import BertConfig
from tfbert.models import (
    AlbertEncoder, BertClassifier, BertEncoder, BertPretrainer,
    BertSpanLabeler, BertTokenClassifier, DistilBertEncoder, ElectraEncoder,
    Encoder, RobertaEncoder)
from tfbert.presets import PRESETS
from tfbert.sentence_encoder import SentenceEncoder
from tfbert.text import BertPreprocessor, BertTokenizer

__version__ = "0.1.0"

__all__ = ["BertConfig", "BertEncoder", "BertTokenizer", "BertPreprocessor",
           "SentenceEncoder", "BertClassifier", "BertSpanLabeler",
           "BertTokenClassifier", "BertPretrainer", "PRESETS", "__version__",
           "Encoder", "DistilBertEncoder", "ElectraEncoder", "RobertaEncoder",
           "AlbertEncoder"]
