"""`python -m tasks.glue` from a checkout; installed, the same program is
`tfbert-glue` (see `tfbert_cli.glue`)."""

from tfbert_cli.glue import main

if __name__ == "__main__":
    main()
