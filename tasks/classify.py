"""`python -m tasks.classify` from a checkout; installed, the same program is
`tfbert-classify` (see `tfbert_cli.classify`)."""

from tfbert_cli.classify import main

if __name__ == "__main__":
    main()
