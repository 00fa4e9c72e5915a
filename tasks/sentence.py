"""`python -m tasks.sentence` from a checkout; installed, the same program
is `tfbert-sentence` (see `tfbert_cli.sentence`)."""

from tfbert_cli.sentence import main

if __name__ == "__main__":
    main()
