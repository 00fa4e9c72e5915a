"""`python -m tasks.pretraining` from a checkout; installed, the same program is
`tfbert-pretrain` (see `tfbert_cli.pretraining`)."""

from tfbert_cli.pretraining import main

if __name__ == "__main__":
    main()
