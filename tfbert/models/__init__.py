"""Encoders of every family and the task models built on them (named by
role; the former `Bert*` names of the task models are aliases)."""

from tfbert.models.bert_classifier import BertClassifier, SequenceClassifier
from tfbert.models.bert_encoder import BertEncoder
from tfbert.models.bert_multiple_choice import MultipleChoiceClassifier
from tfbert.models.bert_pretrainer import BertPretrainer, MaskedLMPretrainer
from tfbert.models.bert_span_labeler import BertSpanLabeler, SpanLabeler
from tfbert.models.bert_text_classifier import (BertTextClassifier,
                                                TextClassifier)
from tfbert.models.bert_token_classifier import (BertTokenClassifier,
                                                 TokenClassifier)
from tfbert.models.encoder import Encoder
from tfbert.models.sentence_encoder import SentenceEncoder
# Each family module registers itself in `tfbert.families`.
from tfbert.models.albert_encoder import AlbertEncoder
from tfbert.models.distilbert_encoder import DistilBertEncoder
from tfbert.models.electra_encoder import ElectraDiscriminator, ElectraEncoder
from tfbert.models.electra_pretrainer import ElectraPretrainer
from tfbert.models.roberta_encoder import RobertaEncoder
