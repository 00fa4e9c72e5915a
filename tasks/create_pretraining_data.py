"""`python -m tasks.create_pretraining_data` from a checkout; installed, the same program is
`tfbert-create-pretraining-data` (see `tfbert_cli.create_pretraining_data`)."""

from tfbert_cli.create_pretraining_data import main

if __name__ == "__main__":
    main()
