"""TF Hub interoperability: tfbert models as TF Hub BERT SavedModels (an
encoder and its matching preprocessor), and TF Hub BERT encoders as
checkpoints `from_pretrained` reads."""

from tfbert.hub.checkpoint import is_hub_saved_model, read_hub_checkpoint
from tfbert.hub.encoder import export_encoder
from tfbert.hub.preprocessor import bert_pack_inputs, export_preprocessor
