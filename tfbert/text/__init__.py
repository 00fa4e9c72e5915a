"""Text processing: vocabulary files, the WordPiece tokenizer, packing."""

from tfbert.text.bert_preprocessor import BertPreprocessor
from tfbert.text.bert_tokenizer import BertTokenizer
from tfbert.text.vocab import load_vocabulary, save_vocabulary

__all__ = ["BertPreprocessor", "BertTokenizer", "load_vocabulary",
           "save_vocabulary"]
