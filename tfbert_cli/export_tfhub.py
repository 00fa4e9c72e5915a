"""Exports a checkpoint as TF Hub SavedModels: a BERT encoder and its
matching preprocessor, and/or a text-embedding model.

    tfbert-export-tfhub --init_checkpoint=minilm-l6-h384-uncased \\
      --encoder_export_dir=saved_models/hub/minilm_encoder \\
      --preprocessor_export_dir=saved_models/hub/minilm_preprocess \\
      [--with_mlm] [--seq_length=128] [--export_precision=bfloat16]
    tfbert-export-tfhub --init_checkpoint=minilm-l6-h384-uncased \\
      --text_embedding_export_dir=saved_models/hub/minilm_embedding \\
      [--pooling=mean] [--normalize]

(`python -m tasks.export_tfhub` from a checkout.) --init_checkpoint takes
anything `tfbert.Encoder.from_pretrained` reads, where the family fits the
interface: the encoder returns `pooled_output`, so it needs a pooler (BERT,
ALBERT, a `RobertaModel`; not DistilBERT or ELECTRA), and the preprocessor
packs `[CLS] A [SEP] B [SEP]` (not RoBERTa's layout). The
encoder SavedModel works with `hub.load` and `hub.KerasLayer(...,
trainable=True)` (tf_keras); with --with_mlm it also has the `mlm`
sub-object (the checkpoint must have a masked-LM head). With
--export_precision=bfloat16 the encoder's weights and matmuls are bfloat16
(its outputs stay float32); that export is for inference. The preprocessor
maps raw strings to the encoder's inputs at --seq_length. The text
embedding (`tfbert.hub.export_text_embedding`) is the checkpoint's
`SentenceEncoder` (any family; pooling and normalisation read from a
sentence-transformers directory unless --pooling / --normalize say
otherwise), raw strings in, float32 embeddings out, fine-tunable with
`hub.KerasLayer(..., trainable=True)`; it is float32 whatever
--export_precision says. See docs/tfhub.md.
"""

from tfbert_cli import program
from tfbert_config.export import check_tfhub_export

_FLAGS = (
    ("string", "init_checkpoint", None,
     "Preset name or checkpoint directory to export (required)."),
    ("string", "encoder_export_dir", None,
     "Directory for the encoder SavedModel (must not exist or be empty)."),
    ("string", "preprocessor_export_dir", None,
     "Directory for the preprocessor SavedModel (must not exist or be "
     "empty)."),
    ("bool", "with_mlm", False,
     "Also export the masked-LM head as the encoder's `mlm` sub-object."),
    ("string", "text_embedding_export_dir", None,
     "Directory for the text-embedding SavedModel (must not exist or be "
     "empty)."),
    ("enum", "pooling", None,
     "Pooling of the text embedding (default: the checkpoint's "
     "sentence-transformers setting, else mean).", ["mean", "cls", "max"]),
    ("bool", "normalize", None,
     "L2-normalise the text embedding (default: the checkpoint's "
     "sentence-transformers setting, else no)."),
    ("integer", "seq_length", 128,
     "Packed length of the preprocessor's default call."),
    ("enum", "export_precision", "float32",
     "Precision the encoder computes in (bfloat16: weights and matmuls in "
     "bfloat16, LayerNorm, softmax and outputs float32; for inference).",
     ["float32", "bfloat16"]),
)


def _check():
    flags = program.FLAGS
    check_tfhub_export(flags.encoder_export_dir, flags.preprocessor_export_dir,
                       flags.text_embedding_export_dir, flags.seq_length)


def main():
    program.main_program(
        _FLAGS, "tfbert.tasks.export_tfhub:run",
        required=("init_checkpoint",), check=_check, doc=__doc__)


if __name__ == "__main__":
    main()
