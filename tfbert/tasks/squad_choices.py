"""Writes a multiple-choice set from a SQuAD JSON file: which sentence of
the paragraph answers the question?

The command line (flags, the checks on their values, --help) is
`tfbert_cli.squad_choices`.
"""

from absl import flags

from tfbert.tasks import runner

FLAGS = flags.FLAGS


def write_from_flags():
    from tfbert.data.squad_choices import write_split

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

