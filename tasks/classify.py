"""`python -m tasks.classify` from a checkout; installed, the same program is
`tfbert-classify` (see `tfbert.tasks.classify`)."""

from tfbert.tasks.classify import main

if __name__ == "__main__":
    main()
