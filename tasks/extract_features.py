"""`python -m tasks.extract_features` from a checkout; installed, the same
program is `tfbert-extract-features` (see `tfbert_cli.extract_features`)."""

from tfbert_cli.extract_features import main

if __name__ == "__main__":
    main()
