"""TF Hub interoperability: tfbert models as TF Hub BERT SavedModels (an
encoder and its matching preprocessor), sentence encoders as TF Hub text
embeddings. Reading TF Hub encoders as checkpoints is
`tfbert.checkpoints.tf_hub`'s (re-exported here)."""

from tfbert.checkpoints.tf_hub import read_hub_checkpoint
from tfbert.hub.encoder import export_encoder
from tfbert.hub.preprocessor import bert_pack_inputs, export_preprocessor
from tfbert.hub.text_embedding import export_text_embedding
from tfbert.utils.tf_hub import is_hub_saved_model
