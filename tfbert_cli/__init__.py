"""tfbert's command-line programs: each module `X` is one program's flags,
the checks on their values that need only Python, its --help text and its
`main` (the console script `tfbert-...`; `python -m tasks.X` in a
checkout). Nothing here imports TensorFlow: a program parses and checks its
command line first, then imports the `tfbert` module that does the work
(`tfbert.tasks.X`), so --help and a refused flag answer at once. The
flag specs, their checks and the config dataclasses made from them
(`specs`, `task_flags`, the task programs' modules) import no absl either:
the library (`tfbert.tasks`) reads them, and absl comes with `program`,
which a running program imports.
`query` runs as a plain file too (with only TensorFlow and
tensorflow-text, as a TF Serving host would).
"""
