"""`python -m tasks.demo` from a checkout; installed, the same program is
`tfbert-demo` (see `tfbert.tasks.demo`)."""

from tfbert.tasks.demo import main

if __name__ == "__main__":
    main()
