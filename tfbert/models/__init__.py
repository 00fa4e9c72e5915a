"""BERT models: the encoder and the task models built on it."""

from tfbert.models.bert_classifier import BertClassifier
from tfbert.models.bert_encoder import BertEncoder
from tfbert.models.bert_pretrainer import BertPretrainer
from tfbert.models.bert_span_labeler import BertSpanLabeler
from tfbert.models.bert_text_classifier import BertTextClassifier
from tfbert.models.bert_token_classifier import BertTokenClassifier
