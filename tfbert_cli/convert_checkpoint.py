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

from tfbert_cli import program

# The layouts written (`tfbert.families.FORMATS`, which a test keeps equal).
FORMATS = ("hf", "tf1", "keras_hub")

_FLAGS = (
    ("string", "input", None,
     "Preset name or checkpoint directory (required)."),
    ("string", "output_dir", None,
     "Directory to write; must not exist or be empty (required)."),
    ("enum", "format", "hf", "Layout to write.", list(FORMATS)),
    ("bool", "with_heads", False,
     "Also convert the masked-LM and next-sentence heads."),
)


def main():
    program.main_program(
        _FLAGS, "tfbert.tasks.convert_checkpoint:run",
        required=("input", "output_dir"), doc=__doc__)


if __name__ == "__main__":
    main()
