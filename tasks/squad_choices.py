"""`python -m tasks.squad_choices` from a checkout; installed, the same
program is `tfbert-squad-choices` (see `tfbert.tasks.squad_choices`)."""

from tfbert.tasks.squad_choices import main

if __name__ == "__main__":
    main()
