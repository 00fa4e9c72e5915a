"""Text classification and regression on your own CSV, TSV or JSONL files.

    tfbert-classify --train_file=train.csv --eval_file=dev.csv \\
      --text_a_column=review --label_column=stars --model_dir=DIR \\
      --export_dir=saved_models/reviews --do_train --do_eval

(`python -m tasks.classify` from a checkout.) Reads the files of
`tfbert.data.classification` (format by extension); pairs with
--text_b_column. Single-label by default: the classes are those of the
training file, sorted (or --label_names), saved as MODEL_DIR/labels.txt and
in the export; an eval label not seen in training is a file:line error.
--regression learns a number; --multi_label any set of classes per row
(joined by --label_separator, or a JSON list), with a sigmoid head, binary
cross-entropy and per-label thresholds tuned for F1 on the eval file (saved
as MODEL_DIR/thresholds.json and applied by the export). With
--doc_stride, a long text is read in strided windows, each trained with the
row's label; evaluation, prediction and the export pool the windows' logits
(--window_pooling=mean|max), so a row is classified from all of its text.

Writes MODEL_DIR/eval_results.json (single-label: accuracy, micro/macro
F1, per-class precision/recall/F1, confusion matrix; regression:
Pearson/Spearman; multi-label: micro/macro F1, per-label F1, subset
accuracy, at 0.5 and at the tuned thresholds), MODEL_DIR/predictions/
<predict file stem>.tsv (`id<TAB>prediction`, the row's `id` column or its
line number) and the same SavedModel as `tfbert-glue`. Without
--doc_stride, texts longer than --max_seq_length are truncated; the run
says how many rows of each file are.

The model, the datasets, the loss and the prediction are GLUE's
(`tfbert.tasks.glue`): the same rows with the same flags train the same
model.
"""

from tfbert_cli import task_flags
from tfbert_cli.errors import UserError

_FLAGS = (
    ("string", "train_file", None,
     "Training data: .csv, .tsv (with a header line) or .jsonl."),
    ("string", "eval_file", None, "Evaluation data, as --train_file."),
    ("string", "predict_file", None,
     "Rows to predict (no label column needed), as --train_file."),
    ("string", "text_a_column", "text", "Column of the (first) text."),
    ("string", "text_b_column", None,
     "Column of the second text, for text pairs."),
    ("string", "label_column", "label", "Column of the label."),
    ("list", "label_names", None,
     "The classes in id order (default: those of --train_file, sorted)."),
    ("bool", "regression", False, "The label is a number to predict."),
    ("bool", "multi_label", False,
     "Each row has any number of classes (joined by --label_separator, or "
     "a JSON list)."),
    ("string", "label_separator", ",",
     "Joins a row's classes with --multi_label."),
    ("enum", "class_weights", "none",
     "Weigh each class's loss: balanced = N / (classes * count).",
     ["none", "balanced"]),
    ("integer", "doc_stride", 0,
     "With > 0, a text longer than --max_seq_length is cut into windows "
     "starting every this many tokens: training labels each window with "
     "its row's label; evaluation, prediction and the export pool the "
     "windows' logits (--window_pooling). 0: long texts are truncated."),
    ("enum", "window_pooling", "mean",
     "How --doc_stride windows' logits make the row's.", ["mean", "max"]),
) + task_flags.DISTILL_FLAGS


def kind(f):
    """The kind of problem the flag values `f` ask for: "regression",
    "multi_label" or "single_label"."""
    return ("regression" if f.regression
            else "multi_label" if f.multi_label else "single_label")


def _check(f):
    for action, flag in (("do_train", "train_file"),
                         ("do_eval", "eval_file"),
                         ("do_predict", "predict_file")):
        if getattr(f, action) and not getattr(f, flag):
            raise UserError(f"`{action}` needs `{flag}`")
    if f.regression and f.multi_label:
        raise UserError("`regression` and `multi_label` exclude "
                        "each other")
    if f.class_weights != "none" and kind(f) != "single_label":
        raise UserError("`class_weights` is read only for "
                        "single-label classification")
    if f.label_names is not None and f.regression:
        raise UserError("`label_names` is read only without "
                        "`regression`")
    if f.doc_stride < 0:
        raise UserError(f"`doc_stride` must be >= 0, got "
                        f"{f.doc_stride}")
    if f.doc_stride and f.text_b_column:
        raise UserError("`doc_stride` is read only without "
                        "`text_b_column` (single texts)")
    if not f.label_separator:
        raise UserError("`label_separator` must not be empty")


def _check_given(f):
    if f["window_pooling"].present and not f.doc_stride:
        raise UserError("--window_pooling is read only with "
                        "--doc_stride")
    # Per-window teacher logits would need per-window targets; the class
    # weights would weigh the hard term only.
    for flag in ("doc_stride", "class_weights"):
        if f[flag].present and f.teacher_model_dir:
            raise UserError(f"--{flag} is not read with --teacher_model_dir")


PROGRAM = task_flags.TaskProgram(
    task="tfbert.tasks.classify:ClassifyTask", flags=_FLAGS, check=_check,
    check_given=_check_given,
    minimum_seq_length=lambda f: 5 if f.text_b_column else 3)


def main():
    task_flags.main(PROGRAM, __doc__)


if __name__ == "__main__":
    main()
