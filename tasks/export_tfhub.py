"""`python -m tasks.export_tfhub` from a checkout (see
`tfbert.tasks.export_tfhub`)."""

from tfbert_cli.export_tfhub import main

if __name__ == "__main__":
    main()
