"""`python -m tasks.pretraining` from a checkout; installed, the same program is
`tfbert-pretrain` (see `tfbert.tasks.pretraining`)."""

from tfbert.tasks.pretraining import main

if __name__ == "__main__":
    main()
