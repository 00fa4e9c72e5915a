"""Writes a multiple-choice set from a SQuAD JSON file: which sentence of
the paragraph answers the question?

    tfbert-squad-choices --squad_file=dev-v1.1.json --output_dir=DIR

(`python -m tasks.squad_choices` from a checkout.) Writes DIR/train.jsonl
and DIR/dev.jsonl, the files `tfbert-multiple-choice` reads (JSONL:
`context` = the question, `choices` = --num_choices sentences of its
paragraph, `label` = the one holding the answer; see
`tfbert.data.squad_choices`). The last --dev_articles articles are dev, so
no paragraph is in both files.
"""

from absl import flags

from tfbert.tasks import runner

FLAGS = flags.FLAGS

_FLAGS = (
    ("string", "squad_file", None, "A SQuAD v1.1 or v2.0 JSON file "
     "(required; unanswerable questions are left out)."),
    ("string", "output_dir", None,
     "Where train.jsonl and dev.jsonl are written (required)."),
    ("integer", "dev_articles", 5, "Articles (the file's last) held out as "
     "dev."),
    ("integer", "num_choices", 4, "Choices of every example."),
    ("integer", "seed", 0, "Seed for drawing and ordering the choices."),
)


def _write_from_flags():
    from tfbert.data.squad_choices import write_split

    if FLAGS.num_choices < 2:
        raise runner.UserError(
            f"--num_choices must be >= 2, got {FLAGS.num_choices}")
    try:
        counts = write_split(FLAGS.squad_file, FLAGS.output_dir,
                             FLAGS.dev_articles, FLAGS.num_choices,
                             FLAGS.seed)
    except KeyError as error:
        raise runner.UserError(f"--squad_file={FLAGS.squad_file}: no "
                               f"{error} field (not a SQuAD file)") from None
    print(f"wrote {counts[0]} train and {counts[1]} dev examples to "
          f"{FLAGS.output_dir}")
    return 0


def main():
    runner.main_program(_FLAGS, _write_from_flags,
                        required=("squad_file", "output_dir"), doc=__doc__)


if __name__ == "__main__":
    main()
