# Every target installs what it needs into .venv first, so on a fresh clone
# `make demo` and `make test` are single commands.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: install demo test test-serving lint bench bench-translator bench-serving bench-attention clean

install: $(STAMP)

$(STAMP): setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e ".[dev,official,serving]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m keras_attention.demo

test: $(STAMP)
	$(PY) -m pytest

# The serving tests alone; with TF_SERVING_URL and TF_SERVING_MODEL_DIR set
# they check a real TF Serving instead of ours (see serving/README.md).
test-serving: $(STAMP)
	$(PY) -m pytest tests/serving

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(PY) benchmarks/layers.py

bench-attention: $(STAMP)
	$(PY) benchmarks/attention_scaling.py

bench-serving: $(STAMP)
	$(PY) benchmarks/serving_load.py

# Trains MODEL (transformer or rnn) on Multi30k for MINUTES (default 60) of
# wall clock; needs the data.
MINUTES ?= 60
MODEL ?= transformer
export MULTI30K_DIR ?= $(abspath ../shared/data/multi30k)
bench-translator: $(STAMP)
	$(PY) benchmarks/translator_multi30k.py --model $(MODEL) --minutes $(MINUTES) \
		--output-dir runs/multi30k-$(MODEL)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis
