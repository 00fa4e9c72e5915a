"""`python -m tasks.ner` from a checkout; installed, the same program is
`tfbert-ner` (see `tfbert.tasks.ner`)."""

from tfbert.tasks.ner import main

if __name__ == "__main__":
    main()
