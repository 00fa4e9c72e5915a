"""Text processing: vocabulary files, the WordPiece, byte-level BPE and
SentencePiece tokenizers, packing."""

from tfbert.text.bert_tokenizer import BertTokenizer
from tfbert.text.byte_bpe_tokenizer import ByteBpeTokenizer
from tfbert.text.preprocessor import BertPreprocessor, Preprocessor
from tfbert.text.sentencepiece_tokenizer import SentencePieceTokenizer
from tfbert.text.vocab import load_vocabulary, save_vocabulary

__all__ = ["BertPreprocessor", "BertTokenizer", "ByteBpeTokenizer",
           "Preprocessor", "SentencePieceTokenizer", "load_vocabulary",
           "save_vocabulary"]
