"""`python -m tasks.sentence` from a checkout; installed, the same program
is `tfbert-sentence` (see `tfbert.tasks.sentence`)."""

from tfbert.tasks.sentence import main

if __name__ == "__main__":
    main()
