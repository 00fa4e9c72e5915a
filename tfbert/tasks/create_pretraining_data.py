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

import time

from absl import flags

from tfbert.data import pretraining
from tfbert import families
from tfbert.models import BertEncoder
from tfbert.tasks import runner

FLAGS = flags.FLAGS


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


def create_from_flags():
    if not (FLAGS.vocab_file or FLAGS.init_checkpoint):
        raise runner.UserError("pass --vocab_file or --init_checkpoint")
    preprocessor = runner.load_preprocessor(FLAGS)
    tokenizer = preprocessor.tokenizer
    objective = (BertEncoder if FLAGS.vocab_file
                 else families.family_of(FLAGS.init_checkpoint).encoder_class
                 ).sentence_objective
    start = time.perf_counter()
    documents = pretraining.tokenize_documents(
        pretraining.read_corpus(FLAGS.input_file.split(",")), tokenizer)
    read_seconds = time.perf_counter() - start
    masking = pretraining.MaskingConfig(
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        masked_lm_prob=FLAGS.masked_lm_prob,
        whole_word_mask=FLAGS.do_whole_word_mask)
    instances = pretraining.create_instances(
        documents, tokenizer, max_seq_length=FLAGS.max_seq_length,
        short_seq_prob=FLAGS.short_seq_prob, dupe_factor=FLAGS.dupe_factor,
        masking=masking, seed=FLAGS.random_seed, objective=objective,
        layout=preprocessor.layout)
    outputs = pretraining.shard_paths(FLAGS.output_file,
                                      FLAGS.num_output_shards)
    counts = pretraining.write_instances(
        instances, outputs, FLAGS.max_seq_length,
        FLAGS.max_predictions_per_seq, pad_id=tokenizer.pad_id)
    seconds = time.perf_counter() - start
    pretraining.write_vocabulary_records(outputs, tokenizer, objective)
    for path, count in zip(outputs, counts):
        print(f"wrote {count} instances to {path}")
    print(f"{len(documents)} documents, {len(instances)} instances in "
          f"{seconds:.1f} s (reading + tokenizing {read_seconds:.1f} s): "
          f"{len(instances) / seconds:.0f} instances/s")
    return 0


def main():
    runner.main_program(_FLAGS, create_from_flags,
                        required=("input_file", "output_file"), doc=__doc__)


if __name__ == "__main__":
    main()
