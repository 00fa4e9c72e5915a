"""Exports a BERT checkpoint as TF Hub BERT SavedModels: an encoder and its
matching preprocessor.

    tfbert-export-tfhub --init_checkpoint=minilm-l6-h384-uncased \\
      --encoder_export_dir=saved_models/hub/minilm_encoder \\
      --preprocessor_export_dir=saved_models/hub/minilm_preprocess \\
      [--with_mlm] [--seq_length=128] [--export_precision=bfloat16]

(`python -m tasks.export_tfhub` from a checkout.) --init_checkpoint takes
anything `BertEncoder.from_pretrained` reads. The
encoder SavedModel works with `hub.load` and `hub.KerasLayer(...,
trainable=True)` (tf_keras); with --with_mlm it also has the `mlm`
sub-object (the checkpoint must have a masked-LM head). With
--export_precision=bfloat16 the encoder's weights and matmuls are bfloat16
(its outputs stay float32); that export is for inference. The preprocessor
maps raw strings to the encoder's inputs at --seq_length; see docs/tfhub.md.
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
                 precision="float32"):
    """Writes the requested SavedModels; returns the directories written."""
    from tfbert.checkpoints import load_pretrainer, read_checkpoint
    from tfbert.export import serving_model
    from tfbert.hub import export_encoder, export_preprocessor
    from tfbert.models import BertEncoder
    from tfbert.text import BertTokenizer

    if not (encoder_export_dir or preprocessor_export_dir):
        raise ValueError("give --encoder_export_dir, --preprocessor_export_dir "
                         "or both")
    if seq_length < 2:
        raise ValueError(f"--seq_length={seq_length}: must be >= 2")
    _check_empty("encoder_export_dir", encoder_export_dir)
    _check_empty("preprocessor_export_dir", preprocessor_export_dir)
    tokenizer = BertTokenizer.from_pretrained(init_checkpoint)
    written = []
    if encoder_export_dir:
        checkpoint = read_checkpoint(init_checkpoint)
        if not checkpoint.weights:
            raise ValueError(f"--init_checkpoint={init_checkpoint} has no "
                             "weights (a random-init preset)")
        if with_mlm:
            if not any(name.startswith(_MLM_HEAD_PREFIX)
                       for name in checkpoint.weights):
                raise ValueError(
                    f"--with_mlm: {checkpoint.source} has no masked-LM head "
                    f"({_MLM_HEAD_PREFIX}* weights)")
            pretrainer = serving_model(load_pretrainer(init_checkpoint),
                                       precision)
            encoder = pretrainer.encoder
        else:
            pretrainer = None
            encoder = serving_model(
                BertEncoder.from_pretrained(init_checkpoint), precision)
        written.append(export_encoder(encoder, tokenizer, encoder_export_dir,
                                      pretrainer=pretrainer))
    if preprocessor_export_dir:
        written.append(export_preprocessor(tokenizer, preprocessor_export_dir,
                                           seq_length=seq_length))
    return written


def _export_from_flags():
    for directory in export_tfhub(
            FLAGS.init_checkpoint, FLAGS.encoder_export_dir,
            FLAGS.preprocessor_export_dir, FLAGS.with_mlm, FLAGS.seq_length,
            FLAGS.export_precision):
        print(f"wrote {directory}")
    return 0


def main():
    """The command-line program (`tfbert-export-tfhub`)."""
    runner.main_program(_FLAGS, _export_from_flags,
                        required=("init_checkpoint",), doc=__doc__)


if __name__ == "__main__":
    main()
