r"""Writes static masked-LM pretraining data as TFRecords.

    tfbert-create-pretraining-data \
      --input_file='corpus/*.txt' --output_file=/tmp/pretrain.tfrecord \
      --vocab_file=vocab.txt (or --init_checkpoint=minilm-l6-h384-uncased) \
      --max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 \
      --dupe_factor=5 --short_seq_prob=0.1 --do_whole_word_mask \
      --random_seed=12345 --num_output_shards=4

(`python -m tasks.create_pretraining_data` from a checkout.) The input is
BERT's corpus format (one sentence per line, a blank line
between documents; `tfbert.data.wikipedia` converts WikiExtractor output).
The records carry Google BERT's feature names; see `tfbert.data.pretraining`.
`--init_checkpoint` of another family writes that family's packing and
sentence objective (sentence order for ALBERT, none for RoBERTa, ...);
`--vocab_file` writes BERT's. Beside each shard, a dot file records the
vocabulary the ids index and the objective, so that pretraining refuses a
model with another vocabulary or objective.
"""

from tfbert_cli import program

FLAGS = program.FLAGS

_FLAGS = (
    ("string", "input_file", None,
     "Corpus file glob; comma-separate several globs (required)."),
    ("string", "output_file", None,
     "Output TFRecord path, or comma-separated paths (required)."),
    ("integer", "num_output_shards", 1,
     "With one --output_file, write OUTPUT-0000i-of-0000N."),
    ("string", "vocab_file", None, "WordPiece vocab.txt."),
    ("bool", "do_lower_case", True,
     "Lower-case with --vocab_file (uncased vocabulary)."),
    ("string", "init_checkpoint", None,
     "Use this preset's / checkpoint's vocabulary instead of --vocab_file."),
    ("integer", "max_seq_length", 128, "Packed sequence length."),
    ("integer", "max_predictions_per_seq", 20,
     "Most masked tokens per sequence."),
    ("float", "masked_lm_prob", 0.15, "Fraction of tokens masked."),
    ("integer", "dupe_factor", 5,
     "Passes over the corpus, each with new masks."),
    ("float", "short_seq_prob", 0.1,
     "Probability of a shorter target length."),
    ("bool", "do_whole_word_mask", False, "Mask whole words."),
    ("integer", "random_seed", 12345, "Seed for pairs and masks."),
)


def _check():
    if not (FLAGS.vocab_file or FLAGS.init_checkpoint):
        raise program.UserError("pass --vocab_file or --init_checkpoint")


def main():
    program.main_program(
        _FLAGS, "tfbert.tasks.create_pretraining_data:run",
        required=("input_file", "output_file"), check=_check, doc=__doc__)


if __name__ == "__main__":
    main()
