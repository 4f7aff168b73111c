# Every target installs what it needs into .venv first, so on a fresh clone
# `make demo` and `make test` are single commands.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_STAMP := $(VENV)/.installed-torch
# TensorFlow's C++ log lines: the tests hide info and warnings (2); the
# demo and the benchmarks, whose first screen a newcomer reads, hide the
# error-level start-up lines too (3: `failed call to cuInit` on a machine
# without a GPU), as the command line does. A level set in the environment
# or on make's command line wins everywhere.
TF_LOG_LEVEL_FROM_USER := $(filter environment command line,$(origin TF_CPP_MIN_LOG_LEVEL))
export TF_CPP_MIN_LOG_LEVEL ?= 2
ifeq ($(TF_LOG_LEVEL_FROM_USER),)
demo bench bench-attention bench-serving bench-translator: export TF_CPP_MIN_LOG_LEVEL := 3
endif

.PHONY: fashion-mnist install demo test test-jax test-torch test-serving docs docs-serve lint bench bench-translator bench-serving bench-attention bench-gpu bench-gpu-prepare clean

install: $(STAMP)

# The suite runs on the oldest TensorFlow of pyproject.toml's ranges
# (.ci/oldest.txt); the packaging test installs the wheel with the newest.
OLDEST := .ci/oldest.txt
$(STAMP): pyproject.toml $(OLDEST)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e ".[dev]" -c $(OLDEST)
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m keras_attention.demo

test: $(STAMP)
	$(PY) -m pytest
	$(MAKE) test-jax
	$(MAKE) test-torch

# The layer, op and property tests again on the JAX backend: layers/ and
# ops/ are written with keras.ops and must not depend on TensorFlow. Every
# test runs; a parametrized one keeps its first case (tests/conftest.py),
# its whole grid having run on TensorFlow. MAX_PARAMS= (empty) runs every
# case; MAX_PARAMS=N keeps N, the first, the last and evenly between.
MAX_PARAMS ?= 1
test-jax: $(STAMP)
	KERAS_BACKEND=jax KERAS_ATTENTION_MAX_PARAMS=$(MAX_PARAMS) $(PY) -m pytest tests/layers tests/ops tests/test_properties.py

# And on the PyTorch backend, keeping the last case of each parametrized
# test: every test function runs on both, and each grid's two ends run off
# TensorFlow (CI's time: 285 cases on each backend, where 2 on JAX were
# 397). PyPI's torch wheel brings CUDA libraries (about 5 GB installed,
# 40 s from a local mirror), so it is an extra of its own, installed the
# first time this target runs.
TORCH_MAX_PARAMS ?= last
$(TORCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[dev,torch]" -c $(OLDEST)
	touch $(TORCH_STAMP)

test-torch: $(TORCH_STAMP)
	KERAS_BACKEND=torch KERAS_ATTENTION_MAX_PARAMS=$(TORCH_MAX_PARAMS) $(PY) -m pytest tests/layers tests/ops tests/test_properties.py

# The serving tests alone; with TF_SERVING_URL and TF_SERVING_MODEL_DIR set
# they check a real TF Serving instead of ours (see serving/README.md).
test-serving: $(STAMP)
	$(PY) -m pytest tests/serving

# The documentation site, in strict mode: a broken link or cross-reference,
# a missing page or a public name without a docstring fails the build.
# The site lands in site/; `make docs-serve` serves it on localhost:8000.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# Every comparison benchmark (about 30 minutes on 2 cores), one JSON file
# each under benchmarks/results/, then benchmarks/RESULTS.md from them.
# Beam search uses the translator of `make bench-translator` when there is
# one (else it trains a tiny one first).
BEAM_MODEL := $(wildcard runs/multi30k-transformer/translator.json)
bench: $(STAMP)
	$(PY) benchmarks/layers.py
	$(PY) benchmarks/beam_search.py $(if $(BEAM_MODEL),--model-dir runs/multi30k-transformer)
	$(PY) benchmarks/training_step.py
	$(PY) benchmarks/local_scaling.py
	$(PY) benchmarks/attention_signature.py
	$(PY) benchmarks/attention_signature.py --model rnn
	$(PY) benchmarks/attention_scaling.py
	$(PY) benchmarks/serving_load.py
	$(PY) benchmarks/summary.py

bench-attention: $(STAMP)
	$(PY) benchmarks/attention_scaling.py
	$(PY) benchmarks/summary.py

bench-serving: $(STAMP)
	$(PY) benchmarks/serving_load.py
	$(PY) benchmarks/summary.py

# Trains MODEL (transformer or rnn) on Multi30k for MINUTES (default 60) of
# wall clock; needs the data.
MINUTES ?= 60
MODEL ?= transformer
export MULTI30K_DIR ?= $(abspath ../shared/data/multi30k)
bench-translator: $(STAMP)
	$(PY) benchmarks/translator_multi30k.py --model $(MODEL) --minutes $(MINUTES) \
		--output-dir runs/multi30k-$(MODEL)

# The prepared GPU run (benchmarks/gpu/run.py; docs/reproductions.md): on
# a machine with one GPU, JAX and Keras, and no TensorFlow needed, at most
# GPU_MINUTES (default 7) of wall time; results into OUT (else runs/gpu).
# bench-gpu-prepare (here, with a network) fetches the wheels and copies
# the data that travel to a GPU machine with no network.
GPU_MINUTES ?= 7
bench-gpu:
	MINUTES=$(GPU_MINUTES) bash benchmarks/gpu/run.sh run

bench-gpu-prepare:
	bash benchmarks/gpu/run.sh prepare

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache .ruff_cache .hypothesis

# Fashion-MNIST (60,000 + 10,000), for `reproductions/systems/sagan_mnist.py --dataset
# fashion`: Debian's package puts its IDX files under
# /usr/share/datasets/fashion-mnist, where keras_attention.data.mnist looks.
fashion-mnist:
	test -d /usr/share/datasets/fashion-mnist || { \
	    sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	    $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	        dataset-fashion-mnist; }
