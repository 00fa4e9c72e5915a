"""Exports a checkpoint as TF Hub BERT SavedModels: an encoder and its
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

from absl import flags

from tfbert.tasks import runner

FLAGS = flags.FLAGS

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

# The masked-LM head --with_mlm exports (canonical names).
_MLM_HEAD_PREFIX = "cls/predictions/"


def _check_empty(flag, directory):
    from tfbert.utils.atomic import check_writable

    if directory:
        try:
            check_writable(directory)
        except FileExistsError as e:
            raise ValueError(f"--{flag}: {e}") from None


def export_tfhub(init_checkpoint, encoder_export_dir=None,
                 preprocessor_export_dir=None, with_mlm=False, seq_length=128,
                 precision="float32", text_embedding_export_dir=None,
                 pooling=None, normalize=None):
    """Writes the requested SavedModels; returns the directories written."""
    from tfbert import families
    from tfbert.hub import export_encoder, export_preprocessor
    from tfbert.text import BertTokenizer, Preprocessor
    from tfbert.text.packing_layout import BERT_LAYOUT

    if not (encoder_export_dir or preprocessor_export_dir
            or text_embedding_export_dir):
        raise ValueError("give --encoder_export_dir, --preprocessor_export_dir "
                         "or --text_embedding_export_dir")
    if seq_length < 2:
        raise ValueError(f"--seq_length={seq_length}: must be >= 2")
    _check_empty("encoder_export_dir", encoder_export_dir)
    _check_empty("preprocessor_export_dir", preprocessor_export_dir)
    _check_empty("text_embedding_export_dir", text_embedding_export_dir)
    written = []
    if text_embedding_export_dir:
        written.append(_export_text_embedding(
            init_checkpoint, text_embedding_export_dir, pooling, normalize))
    if not (encoder_export_dir or preprocessor_export_dir):
        return written
    family = families.family_of(init_checkpoint)
    if family.model_type == "bert":
        tokenizer = BertTokenizer.from_pretrained(init_checkpoint)
        layout = BERT_LAYOUT
    else:
        preprocessor = Preprocessor.from_pretrained(init_checkpoint)
        tokenizer, layout = preprocessor.tokenizer, preprocessor.layout
    if encoder_export_dir:
        encoder, pretrainer = _models(init_checkpoint, family, with_mlm,
                                      precision)
        written.append(export_encoder(encoder, tokenizer, encoder_export_dir,
                                      pretrainer=pretrainer))
    if preprocessor_export_dir:
        if layout != BERT_LAYOUT:
            raise ValueError(
                f"--preprocessor_export_dir: a TF Hub BERT preprocessor packs "
                f"[CLS] A [SEP] B [SEP]; {init_checkpoint} is a "
                f"{family.model_type} checkpoint with another layout")
        written.append(export_preprocessor(tokenizer, preprocessor_export_dir,
                                           seq_length=seq_length))
    return written


def _export_text_embedding(init_checkpoint, export_dir, pooling, normalize):
    from tfbert.hub import export_text_embedding
    from tfbert.models import SentenceEncoder

    model = SentenceEncoder.from_pretrained(init_checkpoint, pooling=pooling,
                                            normalize=normalize)
    return export_text_embedding(model, export_dir)


def _models(init_checkpoint, family, with_mlm, precision):
    """`(encoder, pretrainer or None)` to export, in `precision`."""
    from tfbert.checkpoints import load_pretrainer, read_checkpoint
    from tfbert.export import serving_model
    from tfbert.models import Encoder

    if family.model_type == "bert":
        checkpoint = read_checkpoint(init_checkpoint)
        if not checkpoint.weights:
            raise ValueError(f"--init_checkpoint={init_checkpoint} has no "
                             "weights (a random-init preset)")
        heads = checkpoint.weights
    else:
        heads = read_checkpoint(init_checkpoint).weights if with_mlm else {}
    if with_mlm and not any(name.startswith(_MLM_HEAD_PREFIX)
                            for name in heads):
        raise ValueError(f"--with_mlm: {init_checkpoint} has no masked-LM "
                         "head")
    if with_mlm:
        pretrainer = load_pretrainer(init_checkpoint)
        encoder = pretrainer.encoder
    else:
        pretrainer = None
        encoder = Encoder.from_pretrained(init_checkpoint)
    if encoder.pooler is None:
        raise ValueError(
            f"--init_checkpoint={init_checkpoint}: a TF Hub BERT encoder "
            f"returns pooled_output, and this {type(encoder).__name__} has "
            "no pooler")
    if pretrainer is None:
        return serving_model(encoder, precision), None
    pretrainer = serving_model(pretrainer, precision)
    return pretrainer.encoder, pretrainer


def _export_from_flags():
    for directory in export_tfhub(
            FLAGS.init_checkpoint, FLAGS.encoder_export_dir,
            FLAGS.preprocessor_export_dir, FLAGS.with_mlm, FLAGS.seq_length,
            FLAGS.export_precision, FLAGS.text_embedding_export_dir,
            FLAGS.pooling, FLAGS.normalize):
        print(f"wrote {directory}")
    return 0


def main():
    """The command-line program (`tfbert-export-tfhub`)."""
    runner.main_program(_FLAGS, _export_from_flags,
                        required=("init_checkpoint",), doc=__doc__)


if __name__ == "__main__":
    main()
