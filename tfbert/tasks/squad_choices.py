"""Writes a multiple-choice set from a SQuAD JSON file: which sentence of
the paragraph answers the question?

The command line (flags, the checks on their values, --help) is
`tfbert_cli.squad_choices`.
"""

import os

from tfbert.tasks import runner


def run(config):
    """Writes the two files `config` (the fields of
    `tfbert_cli.squad_choices`'s flags) asks for; a user mistake raises
    `runner.UserError` (or `OSError`) before anything is written."""
    from tfbert.data.squad_choices import (split_by_article,
                                           squad_choice_examples,
                                           write_splits)

    f = config
    if f.num_choices < 2:
        raise runner.UserError(
            f"`num_choices` must be >= 2, got {f.num_choices}")
    if os.path.exists(f.output_dir) and not os.path.isdir(f.output_dir):
        raise runner.UserError(f"`output_dir`={f.output_dir} is a file, "
                               "expected a directory")
    if os.path.isdir(f.squad_file):
        raise runner.UserError(f"`squad_file`={f.squad_file} is a "
                               "directory, expected a SQuAD JSON file")
    try:
        examples = squad_choice_examples(f.squad_file, f.num_choices, f.seed)
    except KeyError as error:
        raise runner.UserError(f"`squad_file`={f.squad_file}: no "
                               f"{error} field (not a SQuAD file)") from None
    except (TypeError, AttributeError):
        raise runner.UserError(f"`squad_file`={f.squad_file}: not a SQuAD "
                               "file (a field of another type)") from None
    if not examples:
        raise runner.UserError(
            f"`num_choices`={f.num_choices}: no answerable question of "
            f"{f.squad_file} has a paragraph of that many sentences")
    try:
        splits = split_by_article(examples, f.dev_articles)
    except ValueError as error:
        raise runner.UserError(str(error)) from None
    counts = write_splits(splits, f.output_dir)
    print(f"wrote {counts[0]} train and {counts[1]} dev examples to "
          f"{f.output_dir}")
    return 0
