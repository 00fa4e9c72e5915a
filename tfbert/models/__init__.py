"""Encoders of every family and the task models built on them."""

from tfbert.models.bert_classifier import BertClassifier
from tfbert.models.bert_encoder import BertEncoder
from tfbert.models.bert_multiple_choice import BertMultipleChoice
from tfbert.models.bert_pretrainer import BertPretrainer
from tfbert.models.bert_span_labeler import BertSpanLabeler
from tfbert.models.bert_text_classifier import BertTextClassifier
from tfbert.models.bert_token_classifier import BertTokenClassifier
from tfbert.models.encoder import Encoder
from tfbert.models.sentence_encoder import SentenceEncoder
# Each family module registers itself with `Encoder`.
from tfbert.models.albert_encoder import AlbertEncoder
from tfbert.models.distilbert_encoder import DistilBertEncoder
from tfbert.models.electra_encoder import ElectraDiscriminator, ElectraEncoder
from tfbert.models.electra_pretrainer import ElectraPretrainer
from tfbert.models.roberta_encoder import RobertaEncoder
