"""Multiple choice (SWAG): fine-tune, evaluate, predict and export.

    tfbert-multiple-choice --train_file=train.csv --dev_file=val.csv \\
      --model_dir=DIR --init_checkpoint=minilm-l6-h384-uncased \\
      --export_dir=saved_models/swag --do_train --do_eval

(`python -m tasks.multiple_choice` from a checkout.) Files are SWAG's CSV
layout (`sent1`, `sent2`, `ending0..ending<N-1>`, `label`) or JSONL
(`context`, `choices`, `label`); see `tfbert.data.multiple_choice`. Every
example has --num_choices choices. Each (context, choice) pair is packed as
a sentence pair and scored; the softmax over an example's scores picks its
choice. Writes MODEL_DIR/eval_results.json (accuracy),
MODEL_DIR/predictions.jsonl for --test_file, and a raw-text SavedModel.
"""

from tfbert_cli import task_flags
from tfbert_cli.errors import UserError

_FLAGS = (
    ("string", "train_file", None, "Training examples (.csv or .jsonl)."),
    ("string", "dev_file", None,
     "Dev examples: --do_eval's, and the best model's during training."),
    ("string", "test_file", None,
     "Examples to predict with --do_predict (labels optional)."),
    ("integer", "num_choices", 4, "Choices of every example."),
)


def _check(f):
    if f.num_choices < 2:
        raise UserError(f"`num_choices` must be >= 2, got {f.num_choices}")
    for action, flag in (("do_train", "train_file"),
                         ("do_eval", "dev_file"),
                         ("do_predict", "test_file")):
        if getattr(f, action) and not getattr(f, flag):
            raise UserError(f"`{action}` needs `{flag}`")


PROGRAM = task_flags.TaskProgram(
    task="tfbert.tasks.multiple_choice:MultipleChoiceTask", flags=_FLAGS,
    check=_check,
    optional_flags=task_flags.OPTIONAL_FLAGS - {"pad_to_max_length"},
    # Two special-token layouts and one token of each text at least.
    minimum_seq_length=lambda f: 5)


def main():
    task_flags.main(PROGRAM, __doc__)


if __name__ == "__main__":
    main()
