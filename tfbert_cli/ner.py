"""Token classification (named entities, chunks, POS tags) of CoNLL or
JSONL files: fine-tune, evaluate, predict and export a token classifier
(softmax or CRF).

    tfbert-ner --train_file=train.txt --eval_file=valid.txt \\
      --predict_file=test.txt --init_checkpoint=minilm-l6-h384-uncased \\
      --model_dir=DIR --export_dir=saved_models/ner --do_train --do_eval \\
      --do_predict --use_crf=false

(`python -m tasks.ner` from a checkout.) `--tag_column` picks the CoNLL
column of the tags (default the last; in CoNLL-2003 1 is POS, 2 chunk, 3
NER); a `.jsonl` file holds `{"tokens": [...], "tags": [...]}` per line.
`--tag_scheme` (iob1, iob2, bioes or plain; `tfbert.data.tag_schemes`)
says how the tags are checked and scored: entity F1 for the first three
(`tfbert.metrics.ner`), accuracy and per-tag F1 for plain tags. Writes
MODEL_DIR/labels.txt,
eval_results.json, predictions.txt (eval set: `token gold predicted`, a
blank line between sentences), test_predictions.txt (predict set; `token
gold predicted` if it has tags, else `token predicted`) and a raw-text
SavedModel under EXPORT_DIR/<version>/ (`tfbert.export.ner_serving`).
Sentences longer than a window are cut into overlapping windows.
"""

from tfbert_cli import task_flags
from tfbert_cli.errors import UserError

# `tfbert.data.tag_schemes.SCHEMES`, which a test keeps equal.
TAG_SCHEMES = ("iob1", "iob2", "bioes", "plain")

_FLAGS = (
    ("string", "train_file", None, "CoNLL (or .jsonl) training file."),
    ("string", "eval_file", None,
     "CoNLL (or .jsonl) file scored by --do_eval and used to keep the best "
     "model while training."),
    ("string", "predict_file", None,
     "CoNLL (or .jsonl) file to tag with --do_predict."),
    ("integer", "tag_column", None,
     "0-based CoNLL column of the tags (column 0 is the token); default "
     "the last. In CoNLL-2003: 1 POS, 2 chunk, 3 NER."),
    ("string", "tag_scheme", "iob2",
     "How the tags are checked and scored: iob1, iob2 or bioes entity "
     "tags (entity F1), or plain tags such as POS (accuracy, per-tag F1)."),
    ("string", "labels", None,
     "Labels: a file (one per line) or a comma list, IOB2 tags for "
     "iob1/iob2 (default: from the training data, or "
     "MODEL_DIR/labels.txt)."),
    ("bool", "use_crf", False, "Add a linear-chain CRF."),
    ("integer", "window_stride", None,
     "WordPieces between the starts of the overlapping windows a long "
     "sentence is cut into (default: half a window)."),
) + task_flags.DISTILL_FLAGS


def _check(f):
    if f.tag_scheme not in TAG_SCHEMES:
        raise UserError(f"`tag_scheme` must be one of {', '.join(TAG_SCHEMES)}, "
                        f"got {f.tag_scheme!r}")
    if f.tag_column is not None and f.tag_column < 1:
        raise UserError(f"`tag_column` must be >= 1 (column 0 is the token), "
                        f"got {f.tag_column}")
    if f.window_stride is not None and not (
            0 < f.window_stride <= f.max_seq_length - 2):
        raise UserError(f"`window_stride` must be in [1, `max_seq_length` - 2 "
                        f"= {f.max_seq_length - 2}], got {f.window_stride}")


PROGRAM = task_flags.TaskProgram(task="tfbert.tasks.ner:NerTask",
                                 flags=_FLAGS, check=_check)


def main():
    task_flags.main(PROGRAM, __doc__)


if __name__ == "__main__":
    main()
