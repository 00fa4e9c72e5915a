"""Task recipes: GLUE, SQuAD, NER and pretraining on one runner
(`tfbert.tasks.runner`), plus the checkpoint, data and TF Hub tools.

Each module is what one command-line program (`tfbert-glue`,
`tfbert-squad`, `tfbert-ner`, `tfbert-pretrain`, ...; `python -m tasks.X`
from a checkout) runs once `tfbert_cli.X`, its command line, has checked
the flags.
"""
