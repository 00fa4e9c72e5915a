"""`python -m tasks.squad_choices` from a checkout; installed, the same
program is `tfbert-squad-choices` (see `tfbert_cli.squad_choices`)."""

from tfbert_cli.squad_choices import main

if __name__ == "__main__":
    main()
