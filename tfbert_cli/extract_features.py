"""Extracts frozen encoder features: the feature-based use of BERT.

    tfbert-extract-features --input_file=texts.txt --output_file=out.jsonl \\
        --init_checkpoint=minilm-l6-h384-uncased --layers=-1,-2,-3,-4

(`python -m tasks.extract_features` from a checkout.) --input_file holds one
text per line, or `text ||| text` for a pair; a `.csv` or `.tsv` (with a
header) or `.jsonl` file gives the text in --text_column (and the pair's
second text in --text_pair_column). Any family's checkpoint works.

Without --pooling, --output_file is JSONL in the layout of Google BERT's
extract_features.py: one object per input line,

    {"linex_index": 0, "features": [{"token": "[CLS]", "layers": [
        {"index": -1, "values": [0.1, ...]}, ...]}, ...]}

with every wordpiece of the packed input (special tokens included) and the
values rounded to 6 decimals. With --pooling=mean|cls, --output_file is a
`.npy` of float32 [texts, features]: each text's chosen layers pooled over
its tokens and joined by --layer_combination (concat: layers x H; sum or
mean: H), ready for scikit-learn. Layer -1 is the last transformer block's
output, 0 the first's. Texts are encoded --batch_size at a time and written
as they come, so memory stays bounded by one batch.
"""

from tfbert_cli import specs
from tfbert_config.files import check_input_file

_FLAGS = (
    ("string", "input_file", None,
     "Texts: one per line (`A ||| B` for a pair), or a .csv/.tsv/.jsonl file "
     "(required)."),
    ("string", "output_file", None,
     "JSONL of per-token features, or with --pooling a .npy (required)."),
    ("string", "init_checkpoint", "minilm-l6-h384-uncased",
     "Preset name or checkpoint directory of any encoder family."),
    ("list", "layers", ["-1", "-2", "-3", "-4"],
     "Comma-separated layer indices (-1: the last transformer block)."),
    ("integer", "max_seq_length", 128,
     "Longest packed input, in tokens; longer texts are truncated."),
    ("integer", "batch_size", 32, "Texts per encoder call."),
    ("enum", "pooling", None,
     "Write one pooled vector per text (.npy) instead of per-token JSONL.",
     ["mean", "cls"]),
    ("enum", "layer_combination", None,
     "With --pooling: how the chosen layers are joined (default concat).",
     ["concat", "sum", "mean"]),
    ("string", "text_column", "text",
     "Column of the text in a .csv, .tsv or .jsonl --input_file."),
    ("string", "text_pair_column", None,
     "Column of a pair's second text in a .csv, .tsv or .jsonl "
     "--input_file."),
)


# The extraction's settings (`tfbert.tasks.extract_features.extract`): a
# field per flag, its default the flag's.
CONFIG_CLASS = specs.config_class("ExtractionConfig", _FLAGS,
                                  module="tfbert.tasks.extract_features")


def main():
    # absl comes with the running program: the library reads the specs
    # above without it.
    from tfbert_cli import program

    def check():
        # Before TensorFlow starts: a mistyped path is told at once.
        try:
            check_input_file(program.FLAGS.input_file, "a file of texts")
        except OSError as error:
            raise program.UserError(str(error)) from None

    program.main_program(
        _FLAGS, "tfbert.tasks.extract_features:run",
        required=("input_file", "output_file"), check=check, doc=__doc__)


if __name__ == "__main__":
    main()
