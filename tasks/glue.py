"""`python -m tasks.glue` from a checkout; installed, the same program is
`tfbert-glue` (see `tfbert.tasks.glue`)."""

from tfbert.tasks.glue import main

if __name__ == "__main__":
    main()
