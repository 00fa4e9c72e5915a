"""Task recipes: GLUE, SQuAD, NER and pretraining on one runner
(`tfbert.tasks.runner`), plus the checkpoint, data and TF Hub tools.

Each module's `main()` is a command-line program (`tfbert-glue`,
`tfbert-squad`, `tfbert-ner`, `tfbert-pretrain`, ...; `python -m tasks.X`
from a checkout).
"""
