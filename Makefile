# make demo  — install, fine-tune MiniLM on the bundled sentiment data,
#              evaluate, export a SavedModel and query it.
# make test  — install and run the test suite.
# make bench — run the benchmarks (long; results go to benchmarks/RESULTS.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast bench clean

# uv installs what pip would (the same resolution), faster; like pip it
# byte-compiles what it installs (--compile-bytecode: without it every
# process compiles TensorFlow's modules again where PYTHONDONTWRITEBYTECODE
# is set, as on the project's machines).
# --find-links: the CPU build of torch that setup.py pins lies in
# /opt/wheels on the project's machines (pip's configuration names it; uv
# reads no pip configuration), and best-match lets it take that file over
# the index's CUDA build of the same version. TF Model Garden is the TF Hub
# format's reference in the tests; a normal install of it would replace
# TensorFlow, so it goes in without dependencies.
UV := $(VENV)/bin/uv
UV_INSTALL := $(UV) pip install --quiet --compile-bytecode --python $(PY) \
	$(if $(wildcard /opt/wheels),--find-links /opt/wheels) \
	--index-strategy unsafe-best-match

$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(UV) || $(PY) -m pip install --quiet 'uv>=0.9'
	$(UV_INSTALL) -e '.[test,pretrained,hub]'
	$(UV_INSTALL) --no-deps 'tf-models-nightly==2.21.0.dev20260217'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m tasks.demo

# Two pytest workers, one per core: the suite is CPU-bound, and more workers
# only oversubscribe the cores (TensorFlow's and the tokenizers' thread pools
# then burn more CPU for the same work); each worker holds a TensorFlow
# runtime of a few GB. A test file's tests stay on one worker (its module
# fixtures are built once), and files start in the order tests/conftest.py
# gives them (most `slow` tests first). A worker that dies ends the run and
# names its test (--max-worker-restart=0: with --dist loadfile, xdist's
# replacement worker can wait forever). Each run ends with its 30 slowest
# tests. PYTHONDONTWRITEBYTECODE is cleared so that the checkout's modules,
# and pytest's rewritten test modules, are compiled once, not in every
# process that imports them.
PYTEST := PYTHONDONTWRITEBYTECODE= TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -q \
	-n 2 --dist loadfile --no-loadscope-reorder --max-worker-restart=0 \
	--durations=30

# The test files in TEST_SHARES shares (tests/conftest.py deals them out),
# one after the other, each with new workers: a worker keeps most of what
# TensorFlow, torch and the tokenizers allocated for the files it ran, so
# two workers that run the whole suite outgrow a 24 GB machine. Every
# share runs; the target fails if any did. What the fixtures build once for
# the whole run (tests/zoo_checkpoints.py `built_once`) lies in
# TFBERT_TEST_BUILD_DIR, a directory of this run's.
TEST_SHARES := 3

test: $(STAMP)
	@status=0; build=$$(mktemp -d); \
	for k in $$(seq 1 $(TEST_SHARES)); do \
	  echo "tests, share $$k of $(TEST_SHARES)"; \
	  TFBERT_TEST_BUILD_DIR=$$build $(PYTEST) --file-share=$$k/$(TEST_SHARES) \
	    tests || status=1; \
	done; rm -rf $$build; exit $$status

# The quick inner loop: everything but the slow end-to-end runs.
test-fast: $(STAMP)
	$(PYTEST) -m "not slow" tests

# The benchmarks, with the settings benchmarks/RESULTS.md reports, one line
# per table in the order of RESULTS.md (hours on a 2-core CPU).
BENCH := TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m benchmarks
THROUGHPUT_SETTINGS := hf_torch,tfbert,keras_hub,hf_torch_bf16,tfbert_bf16,keras_hub_bf16

bench: $(STAMP)
	$(UV_INSTALL) -e '.[bench]'
	$(BENCH).encoder_inference --rounds=3 --matmuls
	$(BENCH).training_throughput --parts=throughput,memory --steps=10 \
	  --warmup_steps=3 --rounds=2 --settings=$(THROUGHPUT_SETTINGS)
	$(BENCH).training_throughput --parts=throughput --steps=10 \
	  --warmup_steps=3 --rounds=3 --settings=hf_torch,tfbert,hf_torch_bf16,tfbert_bf16
	$(BENCH).training_throughput --parts=memory --settings=hf_torch,tfbert \
	  --steps=37 --warmup_steps=3
	$(BENCH).training_throughput --parts=epoch --epoch_examples=1000
	$(BENCH).glue_accuracy --tasks=mrpc,stsb,rte,cola --max_train_examples=0 \
	  --num_train_epochs=3 --workdir=runs/glue_full --output=runs/glue_full/results.json
	$(BENCH).squad --out=runs/squad_bench2 --max_train_examples=2000 --max_seq_length=256
	for run in "--dropout=0" "--dropout=0.1 --seed=44" "--dropout=0.1 --seed=45" \
	    "--dropout=0.1 --attention_dropout=0 --seed=42" \
	    "--dropout=0.1 --attention_dropout=0 --seed=43" \
	    "--dropout=0.1 --seed=42 --shared_masks"; do \
	  for framework in tfbert torch; do \
	    $(BENCH).squad_same_batches --framework=$$framework $$run --out=runs/sq_seeds || exit 1; \
	  done; done
	for seed in 42 43; do for which in tfbert hf; do \
	  $(BENCH).ner --train_sentences=3000 --epochs=2 --which=$$which --seed=$$seed || exit 1; \
	done; done
	$(BENCH).ner --train_sentences=3000 --epochs=2 --which=tfbert_crf --seed=42
	for run in "--seed=42 --shared_masks" "--seed=42" "--seed=43"; do \
	  for which in tfbert hf; do \
	    $(BENCH).ner --train_sentences=2000 --which=$$which --controlled $$run || exit 1; \
	  done; done
	$(BENCH).pretraining --work_dir=runs/pretraining_bench --stage=scratch \
	  --budget_seconds=900 --steps=1500 --eval_every=100
	$(BENCH).pretraining --work_dir=runs/pretraining_bench --stage=sst2
	$(BENCH).pretraining --work_dir=runs/pretraining_bench --stage=minilm
	$(BENCH).serving --workdir=runs/serving --max_sentences=256 --latency_sentences=50 \
	  --rounds=3
	$(BENCH).serving --workdir=runs/serving --max_sentences=256 --latency_sentences=50 \
	  --rounds=2 --onednn=on
	$(BENCH).export_precision --workdir=runs/export_precision
	$(BENCH).feature_based --num_train=2000
	$(BENCH).feature_based_ner --num_train=1000 --num_valid=1000 --finetune_epochs=2
	$(BENCH).multiple_choice --num_train=320 --num_dev=200 --num_train_epochs=1 \
	  --learning_rate=1e-4
	$(BENCH).distillation --task=sst2 --workdir=runs/distillation/sst2 \
	  --student_num_layers=3 --seeds=1,2,3 --max_train_examples=4000 \
	  --num_train_epochs=2 --max_seq_length=64 --learning_rate=1e-4 \
	  --kinds=distilled,labels_only,distilled_unlabelled,distilled_layers \
	  --distill_examples=8000 --export
	$(BENCH).distillation --task=sst2 --workdir=runs/distillation/sst2 \
	  --notrain_teacher --student_num_layers=2 --seeds=1,2,3 \
	  --max_train_examples=4000 --num_train_epochs=2 --max_seq_length=64 \
	  --learning_rate=1e-4 --kinds=distilled,labels_only --export
	$(BENCH).distillation --task=mrpc --workdir=runs/distillation/mrpc \
	  --student_num_layers=3 --seeds=1,2,3 --kinds=distilled,labels_only \
	  --num_train_epochs=2 --max_seq_length=128 --learning_rate=1e-4
	$(BENCH).distillation --task=mrpc --workdir=runs/distillation/mrpc \
	  --notrain_teacher --student_num_layers=2 --seeds=1,2,3 \
	  --kinds=distilled,labels_only --num_train_epochs=2 \
	  --max_seq_length=128 --learning_rate=1e-4
	$(BENCH).distillation --workdir=runs/distillation/sst2 --notrain \
	  --student_num_layers=3,2 --kinds=distilled --max_seq_length=64 \
	  --serving_rounds=3 --step_rounds=5 --step_count=5
	$(BENCH).own_data --num_train=400 --num_eval=300 --num_train_epochs=2 \
	  --workdir=runs/own_data --output=runs/own_data/results.jsonl
	mkdir -p runs/sentence
	for framework in tfbert sentence_transformers; do \
	  $(BENCH).sentence_quality --frameworks=$$framework \
	    --output=runs/sentence/quality_$$framework.json || exit 1; \
	  $(BENCH).sentence_speed --framework=$$framework \
	    --output=runs/sentence/speed_$$framework.json || exit 1; \
	done
	$(BENCH).sentence_speed \
	  --compare=runs/sentence/speed_tfbert.json,runs/sentence/speed_sentence_transformers.json
	$(BENCH).serving_breakdown --workdir=runs/serving
	@echo "GPU table: on a lent GPU machine with JAX, run"
	@echo "  KERAS_BACKEND=jax python -m benchmarks.gpu_mixed_precision --steps=30 \\"
	@echo "    --models=minilm-l6-h384-uncased,bert-base-uncased,distilbert-base-uncased,roberta-base,electra-base-discriminator,albert-base-v2"

clean:
	rm -rf $(VENV) runs build *.egg-info
