"""Converts a BERT checkpoint between layouts.

Reads anything `BertEncoder.from_pretrained` reads (a preset name, an HF,
Google TF1, keras-hub or `save_pretrained` directory) and writes it as an HF
directory (`config.json` + `model.safetensors`, loadable by `transformers`),
a Google TF1 directory (`bert_config.json` + `bert_model.ckpt.*`) or a
keras-hub preset. The vocabulary is copied when the input has one.

    tfbert-convert --input=minilm-l6-h384-uncased \\
        --output_dir=/tmp/minilm_tf1 --format=tf1

(`python -m tasks.convert_checkpoint` from a checkout.) `--input` may also be
a pretraining --model_dir (its exported checkpoint in MODEL_DIR/export is
read). Files are written with the usual permissions (umask).

With --with_heads the masked-LM and next-sentence heads are converted too
(the input must have them; keras-hub presets cannot hold them).
"""

import os

from absl import flags

from tfbert.checkpoints import FORMATS, read_checkpoint, write_checkpoint
from tfbert.checkpoints.variable_map import HEAD_PREFIX
from tfbert.tasks import runner
from tfbert.text.vocab import load_vocabulary

FLAGS = flags.FLAGS


_FLAGS = (
    ("string", "input", None,
     "Preset name or checkpoint directory (required)."),
    ("string", "output_dir", None,
     "Directory to write; must not exist or be empty (required)."),
    ("enum", "format", "hf", "Layout to write.", list(FORMATS)),
    ("bool", "with_heads", False,
     "Also convert the masked-LM and next-sentence heads."),
)


def resolve_source(source):
    """A pretraining --model_dir stands for the checkpoint exported into
    MODEL_DIR/export."""
    source = str(source)
    if not os.path.isdir(os.path.join(source, "checkpoints")):
        return source
    exported = os.path.join(source, "export")
    if os.path.isdir(exported):
        return exported
    raise runner.UserError(
        f"{source} is a training --model_dir without an exported checkpoint: "
        f"rerun tfbert-pretrain with --export_dir={exported}")


def convert(source, output_dir, format="hf", with_heads=False):
    """Converts `source` into `output_dir`; returns the number of variables
    written."""
    checkpoint = read_checkpoint(resolve_source(source))
    if checkpoint.model_type != "bert":
        raise ValueError(f"{source}: a {checkpoint.model_type} checkpoint; "
                         "only BERT's are written in other formats (the "
                         "other families have HF's layout only)")
    if not checkpoint.weights:
        raise ValueError(f"{source}: has no weights (a random-init preset); "
                         "nothing to convert")
    heads = {k for k in checkpoint.weights if k.startswith(HEAD_PREFIX)}
    if with_heads and not heads:
        raise ValueError(f"{checkpoint.source}: --with_heads, but the "
                         "checkpoint has no masked-LM/next-sentence heads")
    if with_heads and format == "keras_hub":
        raise ValueError("--with_heads: a keras-hub preset holds only the "
                         "backbone")
    weights = {k: v for k, v in checkpoint.weights.items()
               if with_heads or k not in heads}
    vocabulary = (load_vocabulary(checkpoint.vocab_path)
                  if checkpoint.vocab_path else None)
    lowercase = True
    if vocabulary is not None:
        from tfbert.text import BertTokenizer

        lowercase = BertTokenizer.from_pretrained(
            resolve_source(source)).lowercase
    write_checkpoint(output_dir, checkpoint.config, weights,
                     vocabulary=vocabulary, lowercase=lowercase, format=format)
    return len(weights)


def _convert_from_flags():
    count = convert(FLAGS.input, FLAGS.output_dir, FLAGS.format,
                    FLAGS.with_heads)
    print(f"wrote {count} variables to {FLAGS.output_dir} ({FLAGS.format})")
    return 0


def main():
    runner.main_program(_FLAGS, _convert_from_flags,
                        required=("input", "output_dir"), doc=__doc__)


if __name__ == "__main__":
    main()
