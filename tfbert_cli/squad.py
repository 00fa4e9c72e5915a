"""SQuAD v1.1 / v2.0: fine-tune, evaluate, predict and export a span labeler.

    tfbert-squad --version=1.1 --train_file=F --eval_file=F --predict_file=F \\
      --init_checkpoint=minilm-l6-h384-uncased --model_dir=DIR \\
      --export_dir=saved_models/squad --do_train --do_eval --do_predict

(`python -m tasks.squad` from a checkout.) --do_eval scores --eval_file with
the official metrics (MODEL_DIR/eval_results.json);
--do_predict writes MODEL_DIR/predictions.json, nbest_predictions.json and,
for v2.0, null_odds.json for --predict_file. The export is a raw-text
SavedModel (`tfbert.export.squad_serving`).
"""

from tfbert_cli import task_flags
from tfbert_cli.errors import UserError

_FLAGS = (
    ("enum", "version", "1.1",
     "SQuAD version; 2.0 has unanswerable questions.",
     ["1.1", "2.0"]),
    ("string", "train_file", None, "SQuAD JSON to train on."),
    ("string", "eval_file", None,
     "SQuAD JSON with answers, scored by --do_eval and used to keep the "
     "best model while training."),
    ("string", "predict_file", None,
     "SQuAD JSON to answer with --do_predict."),
    ("integer", "doc_stride", 128,
     "Tokens between the starts of context windows."),
    ("integer", "max_query_length", 64,
     "Questions are truncated to this many tokens."),
    ("integer", "n_best_size", 20, "Entries per nbest list."),
    ("integer", "max_answer_length", 30, "Longest answer, in tokens."),
    ("float", "null_score_diff_threshold", 0.0,
     "v2.0: answer \"\" when the null score minus the best span score "
     "exceeds this (eval_results.json reports the best value as "
     "best_f1_thresh)."),
) + task_flags.DISTILL_FLAGS


def _check(f):
    for name in ("doc_stride", "max_query_length", "n_best_size",
                 "max_answer_length"):
        if getattr(f, name) <= 0:
            raise UserError(f"`{name}` must be positive, got "
                            f"{getattr(f, name)}")


PROGRAM = task_flags.TaskProgram(
    task="tfbert.tasks.squad:SquadTask", flags=_FLAGS, check=_check,
    defaults={"max_seq_length": 384, "train_batch_size": 16,
              "num_train_epochs": 2.0},
    # [CLS] query [SEP] at least one context token [SEP]; RoBERTa's layout
    # needs one more (checked once the tokenizer is read).
    minimum_seq_length=lambda f: f.max_query_length + 4)


def main():
    task_flags.main(PROGRAM, __doc__)


if __name__ == "__main__":
    main()
