"""`python -m tasks.squad` from a checkout; installed, the same program is
`tfbert-squad` (see `tfbert_cli.squad`)."""

from tfbert_cli.squad import main

if __name__ == "__main__":
    main()
