"""`python -m tasks.multiple_choice` from a checkout; installed, the same
program is `tfbert-multiple-choice` (see `tfbert.tasks.multiple_choice`)."""

from tfbert.tasks.multiple_choice import main

if __name__ == "__main__":
    main()
