"""Converts a BERT checkpoint between layouts.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.convert_checkpoint`.
"""

import os

from tfbert.checkpoints import read_checkpoint, write_checkpoint
from tfbert.checkpoints.variable_map import HEAD_PREFIX
from tfbert.tasks import runner
from tfbert.text.vocab import load_vocabulary

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
        # Flags of another program: named as its command line takes them.
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
        raise ValueError(f"{checkpoint.source}: `with_heads`, but the "
                         "checkpoint has no masked-LM/next-sentence heads")
    if with_heads and format == "keras_hub":
        raise ValueError("`with_heads`: a keras-hub preset holds only the "
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


def run(config):
    """`convert` as `config` (with `input`, `output_dir`, `format` and
    `with_heads`) says; prints what it wrote and returns 0."""
    count = convert(config.input, config.output_dir, config.format,
                    config.with_heads)
    print(f"wrote {count} variables to {config.output_dir} "
          f"({config.format})")
    return 0

