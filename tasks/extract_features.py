"""`python -m tasks.extract_features` from a checkout; installed, the same
program is `tfbert-extract-features` (see `tfbert.tasks.extract_features`)."""

from tfbert.tasks.extract_features import main

if __name__ == "__main__":
    main()
