"""`python -m tasks.convert_checkpoint` from a checkout; installed, the same program is
`tfbert-convert` (see `tfbert_cli.convert_checkpoint`)."""

from tfbert_cli.convert_checkpoint import main

if __name__ == "__main__":
    main()
