"""Keras layers of the BERT encoder and its task heads, in Keras ops only
(every backend; `tfbert.inference` holds the TensorFlow serving forms)."""

from tfbert.layers.activations import get_activation
from tfbert.layers.attention import MultiHeadSelfAttention
from tfbert.layers.classification_head import ClassificationHead
from tfbert.layers.embeddings import BertEmbeddings
from tfbert.layers.layer_norm import LayerNorm
from tfbert.layers.masked_lm_head import MaskedLMHead
from tfbert.layers.masking import MASKED_LOGIT, padding_bias
from tfbert.layers.next_sentence_head import NextSentenceHead
from tfbert.layers.pooler import Pooler
from tfbert.layers.replaced_token_head import ReplacedTokenHead
from tfbert.layers.sentence_pooling import L2Normalization, SentencePooling
from tfbert.layers.span_labeling_head import SpanLabelingHead
from tfbert.layers.token_classification_head import TokenClassificationHead
from tfbert.layers.transformer_block import TransformerBlock
