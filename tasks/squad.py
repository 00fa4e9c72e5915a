"""`python -m tasks.squad` from a checkout; installed, the same program is
`tfbert-squad` (see `tfbert.tasks.squad`)."""

from tfbert.tasks.squad import main

if __name__ == "__main__":
    main()
