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

import os

from tfbert_cli import program

FLAGS = program.FLAGS

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


def _check():
    if FLAGS.num_choices < 2:
        raise program.UserError(
            f"--num_choices must be >= 2, got {FLAGS.num_choices}")
    # Before TensorFlow starts: a mistyped path is told at once.
    if not os.path.exists(FLAGS.squad_file):
        raise program.UserError(
            f"{FLAGS.squad_file}: No such file or directory")


def main():
    program.main_program(
        _FLAGS, "tfbert.tasks.squad_choices:run",
        required=("squad_file", "output_dir"), check=_check, doc=__doc__)


if __name__ == "__main__":
    main()
