"""`python -m tasks.ner` from a checkout; installed, the same program is
`tfbert-ner` (see `tfbert_cli.ner`)."""

from tfbert_cli.ner import main

if __name__ == "__main__":
    main()
