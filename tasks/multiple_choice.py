"""`python -m tasks.multiple_choice` from a checkout; installed, the same
program is `tfbert-multiple-choice` (see `tfbert_cli.multiple_choice`)."""

from tfbert_cli.multiple_choice import main

if __name__ == "__main__":
    main()
