"""`python -m tasks.demo` from a checkout; installed, the same program is
`tfbert-demo` (see `tfbert_cli.demo`)."""

from tfbert_cli.demo import main

if __name__ == "__main__":
    main()
