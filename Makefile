# The README's commands.  Each target creates the local virtual environment
# (.venv) on first use and installs what it needs, at the exact versions of
# requirements/lock.txt (so a new release of a dependency never changes what
# `make test` runs; `make test-latest` tries the newest releases instead).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
OUT    ?= figures
LOCK   := requirements/lock.txt
EXTRAS := viz,test,docs,bench
# torch is pinned and installed first, on its own, so that no other package can pull a different build
TORCH  := torch==2.13.0

.PHONY: figures test docs bench gpu-bundle lock test-latest test-device-torch clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c $(LOCK) pip

# figures: matplotlib only (no torch, no jax)
$(VENV)/.viz: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install -q -c $(LOCK) -e ".[viz]"
	touch $@

# tests (ruff, then pytest), docs and benchmarks: every backend
$(VENV)/.all: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -c $(LOCK) -e ".[$(EXTRAS)]"
	touch $(VENV)/.viz $@

figures: $(VENV)/.viz
	$(BIN)/posenc-viz all --out $(OUT) --force

test: $(VENV)/.all
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2

docs: $(VENV)/.all
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

bench: $(VENV)/.all
	$(BIN)/python -m benchmarks

# gpu-bundle: what a GPU machine without a package index needs beyond its own
# packages (torch, CuPy, JAX, pytest, hypothesis, transformers): the pinned
# array-api-compat wheel, into an ignored folder that travels with the working
# tree; `python -m benchmarks --gpu-check` installs it from there (CONTRIBUTING.md)
WHEELS := benchmarks/out/wheels
gpu-bundle:
	mkdir -p $(WHEELS)
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: -d $(WHEELS) \
		"array-api-compat==$$(sed -n 's/^array-api-compat==//p' $(LOCK))"
	ls $(WHEELS)

# lock: the newest releases that pyproject.toml admits, installed in a fresh
# environment (torch first, as above) and written to requirements/lock.txt
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install -q --upgrade pip
	.venv-lock/bin/python -m pip install -q "$(TORCH)"
	.venv-lock/bin/python -m pip install -q -e ".[$(EXTRAS)]"
	.venv-lock/bin/python requirements/write_lock.py .venv-lock/bin/python $(LOCK)
	rm -rf .venv-lock

# test-latest: the suite and the transformers sweep against the newest
# releases (not part of CI): prints the packages that differ from the lock,
# then the models that are new or changed against tests/posenc/data/hf_sweep.json
test-latest:
	rm -rf .venv-latest
	$(PYTHON) -m venv .venv-latest
	.venv-latest/bin/python -m pip install -q --upgrade pip
	.venv-latest/bin/python -m pip install -q "$(TORCH)"
	.venv-latest/bin/python -m pip install -q --upgrade -e ".[$(EXTRAS)]"
	.venv-latest/bin/python requirements/write_lock.py .venv-latest/bin/python --diff $(LOCK)
	status=0; \
	.venv-latest/bin/ruff check . || status=1; \
	.venv-latest/bin/mypy || status=1; \
	.venv-latest/bin/python -m pytest -n 2 -p no:cacheprovider || status=1; \
	.venv-latest/bin/python tests/posenc/data/make_hf_sweep.py --compare || status=1; \
	exit $$status

# test-device-torch: the suite on the CPU under the torch release of the GPU
# machines the device check runs on (torch 2.11 and the Triton it brings; a
# CUDA build of about 5 GB, not part of CI): what that torch's tracer and
# Triton's interpreter make of posenc, found before a device run
DEVICE_TORCH := torch==2.11.0
test-device-torch:
	rm -rf .venv-device
	$(PYTHON) -m venv .venv-device
	.venv-device/bin/python -m pip install -q -c $(LOCK) pip
	.venv-device/bin/python -m pip install -q "$(DEVICE_TORCH)"
	# the lock's other packages (its torch, the Triton pinned for the CPU interpreter and the
	# setuptools that torch 2.11 caps give way; nothing may replace the torch installed above)
	grep -v -E '^(torch|triton|setuptools)==' $(LOCK) > .venv-device/requirements.txt
	echo "$(DEVICE_TORCH)" > .venv-device/constraints.txt
	.venv-device/bin/python -m pip install -q -c .venv-device/constraints.txt -r .venv-device/requirements.txt
	.venv-device/bin/python -m pip install -q --no-deps -e .
	.venv-device/bin/python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
	.venv-device/bin/python -m pytest -n 2 -p no:cacheprovider tests/posenc tests/hardening

clean:
	rm -rf docs/_build docs/api/generated docs/auto_examples .pytest_cache .hypothesis
