# The README's commands.  Each target creates the local virtual environment
# (.venv) on first use and installs what it needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
OUT    ?= figures

.PHONY: figures test docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# figures: matplotlib only (no torch, no jax)
$(VENV)/.viz: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[viz]"
	touch $@

# tests (ruff, then pytest), docs and benchmarks: every backend.  torch is pinned and installed
# first, on its own, so that no other package can pull a different build.
$(VENV)/.all: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[viz,test,docs,bench]"
	touch $(VENV)/.viz $@

figures: $(VENV)/.viz
	$(BIN)/posenc-viz all --out $(OUT) --force

test: $(VENV)/.all
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n 2

docs: $(VENV)/.all
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

bench: $(VENV)/.all
	$(BIN)/python -m benchmarks

clean:
	rm -rf docs/_build docs/api/generated docs/auto_examples .pytest_cache .hypothesis
