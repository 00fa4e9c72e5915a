"""Sentence embeddings: train, evaluate and export a bi-encoder.

    tfbert-sentence --train_file=stsb_train.tsv --eval_file=stsb_dev.tsv \\
      --text_a_column=sentence1 --text_b_column=sentence2 \\
      --label_column=score --score_scale=5 --loss=cosine \\
      --init_checkpoint=minilm-l6-h384-uncased --model_dir=DIR \\
      --export_dir=saved_models/stsb --do_train --do_eval

(`python -m tasks.sentence` from a checkout.) Files are TSV, CSV or JSONL
(by extension; see `tfbert.data.sentence_pairs`). --do_eval runs the
evaluator that fits the eval file: scores -> STS (Spearman / Pearson of the
cosine), 0/1 labels -> pair classification (accuracy, F1, average precision
at the best threshold), no label column -> retrieval of each row's text_b by
its text_a (recall@1/5/10, MRR@10, NDCG@10, MAP@100). Results go to
MODEL_DIR/eval_results.json (and TensorBoard, after every epoch); the export
under EXPORT_DIR/<version>/ maps `text` to `embedding`.

The losses (`tfbert.losses`) and what they read:
  mnrl                in-batch negatives (+ --text_negative_column);
                      batches hold no text twice
  cosine, cosent      --label_column scores
  triplet             --text_negative_column
  contrastive,
  online_contrastive  --label_column 0/1
"""

from tfbert_cli import task_flags
from tfbert_cli.errors import UserError

# The training losses, sorted (`tfbert.tasks.sentence.LOSSES`, which a test
# keeps equal).
LOSS_NAMES = ("contrastive", "cosent", "cosine", "mnrl", "online_contrastive",
              "triplet")

_FLAGS = (
    ("string", "train_file", None, "Training pairs: .tsv, .csv or .jsonl."),
    ("string", "eval_file", None, "Evaluation pairs: .tsv, .csv or .jsonl."),
    ("string", "text_a_column", "text_a", "Column of the first text."),
    ("string", "text_b_column", "text_b", "Column of the second text."),
    ("string", "text_negative_column", None,
     "Column of a hard negative text (mnrl, triplet)."),
    ("string", "label_column", None,
     "Column of the label: a similarity score or 0/1."),
    ("float", "score_scale", 1.0,
     "Labels are divided by this (5 for STS-B's 0-5 scores) and must lie "
     "in [0, score_scale]."),
    ("enum", "loss", "mnrl", "Training loss (see the module docstring).",
     list(LOSS_NAMES)),
    ("enum", "pooling", None,
     "Pooling of the token vectors (default: the checkpoint's "
     "sentence-transformers setting, else mean).", ["mean", "cls", "max"]),
    ("bool", "normalize", None,
     "L2-normalise the embeddings (default: the checkpoint's "
     "sentence-transformers setting, else no)."),
)


def _check(f):
    if f.do_train and not f.train_file:
        raise UserError("`do_train` needs `train_file`")
    if f.do_eval and not f.eval_file:
        raise UserError("`do_eval` needs `eval_file`")
    if not f.score_scale > 0:
        raise UserError(f"`score_scale` must be positive, got "
                        f"{f.score_scale}")
    if f.do_train and f.loss == "mnrl" and f.train_batch_size < 2:
        raise UserError(f"`loss`=mnrl needs `train_batch_size` >= 2 (the "
                        f"other examples of a batch are the negatives), got "
                        f"{f.train_batch_size}")


PROGRAM = task_flags.TaskProgram(
    task="tfbert.tasks.sentence:SentenceTask", flags=_FLAGS, check=_check,
    optional_flags=frozenset({"max_train_examples", "max_eval_examples",
                              "export_token_ids_only", "export_precision",
                              "export_constant_kernels",
                              "export_feed_forward_shards",
                              "export_xla"}))


def main():
    task_flags.main(PROGRAM, __doc__)


if __name__ == "__main__":
    main()
