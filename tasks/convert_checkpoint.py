"""Converts a BERT checkpoint between layouts.

Reads anything `BertEncoder.from_pretrained` reads (a preset name, an HF,
Google TF1, keras-hub or `save_pretrained` directory) and writes it as an HF
directory (`config.json` + `model.safetensors`, loadable by `transformers`),
a Google TF1 directory (`bert_config.json` + `bert_model.ckpt.*`) or a
keras-hub preset. The vocabulary is copied when the input has one.

    python -m tasks.convert_checkpoint --input=minilm-l6-h384-uncased \\
        --output_dir=/tmp/minilm_tf1 --format=tf1

With --with_heads the masked-LM and next-sentence heads are converted too
(the input must have them; keras-hub presets cannot hold them).
"""

from absl import app, flags, logging

from tfbert.checkpoints import FORMATS, read_checkpoint, write_checkpoint
from tfbert.checkpoints.variable_map import HEAD_PREFIX
from tfbert.text.vocab import load_vocabulary

FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, "Preset name or checkpoint directory.")
flags.DEFINE_string("output_dir", None,
                    "Directory to write; must not exist or be empty.")
flags.DEFINE_enum("format", "hf", list(FORMATS), "Layout to write.")
flags.DEFINE_bool("with_heads", False,
                  "Also convert the masked-LM and next-sentence heads.")
flags.mark_flags_as_required(["input", "output_dir"])


def convert(source, output_dir, format="hf", with_heads=False):
    """Converts `source` into `output_dir`; returns the number of variables
    written."""
    checkpoint = read_checkpoint(source)
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

        lowercase = BertTokenizer.from_pretrained(source).lowercase
    write_checkpoint(output_dir, checkpoint.config, weights,
                     vocabulary=vocabulary, lowercase=lowercase, format=format)
    return len(weights)


def main(argv):
    del argv
    count = convert(FLAGS.input, FLAGS.output_dir, FLAGS.format,
                    FLAGS.with_heads)
    logging.info("wrote %d variables to %s (%s)", count, FLAGS.output_dir,
                 FLAGS.format)


if __name__ == "__main__":
    app.run(main)
