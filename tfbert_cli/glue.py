"""GLUE: fine-tune, evaluate, predict and export a sequence classifier.

    tfbert-glue --task=sst2 --data_dir=DIR --model_dir=DIR \\
      --init_checkpoint=minilm-l6-h384-uncased --export_dir=saved_models/sst2 \\
      --do_train --do_eval --do_predict

(`python -m tasks.glue` from a checkout.) Reads DATA_DIR/<TASK>/{train,dev,
test}.tsv; writes MODEL_DIR/eval_results.json, GLUE submission files under
MODEL_DIR/predictions/ and a raw-text SavedModel under EXPORT_DIR/<version>/.
"""

from tfbert_cli import task_flags
from tfbert_cli.errors import UserError

# The GLUE tasks, sorted (`tfbert.data.glue.TASKS`, which a test keeps
# equal).
TASK_NAMES = ("cola", "mnli", "mrpc", "qnli", "qqp", "rte", "sst2", "stsb",
              "wnli")
# Those of text pairs (`GlueTask.is_pair`, kept equal by the same test).
PAIR_TASK_NAMES = ("mnli", "mrpc", "qnli", "qqp", "rte", "stsb", "wnli")

_FLAGS = (
    ("enum", "task", None,
     "GLUE task (required).",
     list(TASK_NAMES)),
    ("string", "data_dir", None,
     "Directory holding <TASK>/{train,dev,test}.tsv (required)."),
    ("list", "label_names", None,
     "Names for the exported `label` output, in class order (default: "
     "the task's label names)."),
) + task_flags.DISTILL_FLAGS


def _check(f):
    if not f.task:
        raise UserError("`task` is required")
    if not f.data_dir:
        raise UserError("`data_dir` is required")


PROGRAM = task_flags.TaskProgram(
    task="tfbert.tasks.glue:GlueTask", flags=_FLAGS, check=_check,
    # [CLS] a [SEP] (b [SEP]) with at least one token of each text.
    minimum_seq_length=lambda f: 5 if f.task in PAIR_TASK_NAMES else 3)


def main():
    task_flags.main(PROGRAM, __doc__)


if __name__ == "__main__":
    main()
