r"""Masked-LM pretraining with the family's sentence objective, from
scratch or continued.

Static data (TFRecords from `tfbert-create-pretraining-data`):

    tfbert-pretrain --input_file='/tmp/pretrain.tfrecord*' \
      --init_checkpoint=minilm-l6-h384-uncased --model_dir=/tmp/pt \
      --do_train --num_train_steps=10000 --export_dir=/tmp/pt/export

Dynamic masking (raw corpus; new pairs and masks every epoch):

    tfbert-pretrain --corpus_file='corpus/*.txt' --vocab_file=vocab.txt \
      --bert_config_file=config.json --model_dir=/tmp/pt --do_train \
      --do_eval --eval_corpus_file=held_out.txt

(`python -m tasks.pretraining` from a checkout.) `--init_checkpoint` is any
checkpoint `load_pretrainer` reads, of any family; the family decides the
objective: masked-LM plus next-sentence prediction (BERT), plus
sentence-order prediction (ALBERT), or masked-LM alone (DistilBERT,
RoBERTa, ELECTRA's generator), and the packing (RoBERTa's `<s> A </s>`).
An ELECTRA discriminator with `--generator_checkpoint` is trained by
replaced-token detection (`ElectraPretrainer`) and exported as
`EXPORT_DIR/discriminator` and `EXPORT_DIR/generator`.
Head weights the checkpoint lacks (the MiniLM package has no MLM/NSP head)
start random, which is logged; a family directory with a config and
tokenizer but no weights file pretrains from scratch. `--bert_config_file`
(a BERT `config.json`, see docs/pretraining.md) trains a fresh model of that
shape instead; so does a preset without weights (`bert-mini-uncased`), sized
to the vocabulary. A new vocabulary means pretraining from scratch: static
data records the vocabulary it was made with, and a checkpoint or
--vocab_file with another vocabulary is refused. `--export_dir` writes the
encoder and heads as an HF-layout checkpoint with the tokenizer files (the
family's pretraining model: `BertForPreTraining`, `RobertaForMaskedLM`,
`AlbertForPreTraining`, ...), which `--init_checkpoint` of every task
accepts.
"""

from tfbert_cli import task_flags
from tfbert_cli.errors import UserError

_FLAGS = (
    ("string", "input_file", None,
     "Static TFRecord glob(s), comma-separated."),
    ("string", "corpus_file", None, "Raw corpus glob(s) for dynamic masking."),
    ("string", "eval_input_file", None, "Static eval TFRecords."),
    ("string", "eval_corpus_file", None,
     "Raw eval corpus (masked once, with --seed)."),
    ("integer", "num_train_steps", 0,
     "Train this many batches (overrides --num_train_epochs; 0 = use "
     "epochs)."),
    ("integer", "max_predictions_per_seq", 20,
     "Most masked tokens per sequence."),
    ("float", "masked_lm_prob", 0.15, "Dynamic masking rate."),
    ("float", "short_seq_prob", 0.1, "Dynamic short-sequence rate."),
    ("bool", "do_whole_word_mask", False, "Dynamic whole-word masks."),
    ("string", "bert_config_file", None,
     "Train from scratch with this architecture (a BERT config.json)."),
    ("string", "generator_checkpoint", None,
     "ELECTRA: the generator (an ElectraForMaskedLM directory, or a "
     "config.json without weights to start it random); with it the ELECTRA "
     "--init_checkpoint is trained by replaced-token detection."),
)


def _one_source(f, static_flag, corpus_flag, needed):
    if needed and (bool(getattr(f, static_flag))
                   == bool(getattr(f, corpus_flag))):
        raise UserError(
            f"pass exactly one of `{static_flag}` (static TFRecords) and "
            f"`{corpus_flag}` (raw text, dynamic masking)")


def _check(f):
    if f.num_train_steps < 0:
        raise UserError(f"`num_train_steps` must be >= 0, got "
                        f"{f.num_train_steps}")
    if not 0 < f.masked_lm_prob < 1:
        raise UserError(f"`masked_lm_prob` must be in (0, 1), got "
                        f"{f.masked_lm_prob}")
    if f.max_predictions_per_seq <= 0:
        raise UserError(f"`max_predictions_per_seq` must be positive, got "
                        f"{f.max_predictions_per_seq}")
    _one_source(f, "input_file", "corpus_file", f.do_train)
    _one_source(f, "eval_input_file", "eval_corpus_file",
                f.do_eval or (f.do_train and bool(f.eval_input_file
                                                  or f.eval_corpus_file)))


PROGRAM = task_flags.TaskProgram(
    task="tfbert.tasks.pretraining:PretrainingTask", flags=_FLAGS,
    check=_check, defaults={"learning_rate": 1e-4, "num_train_epochs": 1.0},
    # No test-set predictions, no token-id export, no head dropout, and
    # fixed-length batches of records (not examples) only.
    optional_flags=frozenset())


def main():
    task_flags.main(PROGRAM, __doc__)


if __name__ == "__main__":
    main()
