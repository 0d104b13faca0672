# The README's two entry points: `make serve` (the playground) and `make test` (every test, as CI
# runs it). Every target that needs the venv or node_modules sets up first: scripts/setup.sh makes
# what a fresh machine lacks and does nothing (in about a second) when all is there.
PY := .venv/bin/python
export XDG_RUNTIME_DIR ?= /tmp

.PHONY: setup serve test test-fast test-js test-py gen gen-check lint lock

setup:
	@bash scripts/setup.sh

serve: setup
	$(PY) -m gpulab serve --host 127.0.0.1 --port 8000

# Everything: node tests, Python tests, the conformance corpus on every lane, Playwright; the 40
# slowest tests are printed, so every run shows where its time goes.
test: setup
	node --test --test-concurrency=2 backends-js/test/
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=40

# Before every commit (at most 3 minutes on 2 cores): the node tests, the Python units and the
# conformance corpus on the CPU lanes (cpu-python, node-cpu), leaving out what is marked `slow`
# (a browser, a model end to end, a lavapipe sweep).
FAST_PY := pylib/tests e2e/test_conformance_cpu.py e2e/test_bad_graphs.py
test-fast: setup
	node --test --test-concurrency=2 backends-js/test/
	$(PY) -m pytest -q -n 2 --dist worksteal -m "not slow" $(FAST_PY)

test-js: setup
	node --test --test-concurrency=2 backends-js/test/

test-py: setup
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=40

lint: setup
	$(PY) -m ruff check pylib e2e bench scripts
	$(PY) -m ruff format --check pylib e2e bench scripts

# Every generated file (templated kernels, corpus, docs tables, kernels.wasm) from its one
# source: gpulab.codegen. gen-check writes nothing and fails if anything is stale.
gen: setup
	$(PY) -m gpulab.codegen

gen-check: setup
	$(PY) -m gpulab.codegen --check

# Refresh requirements.lock.txt (every Python dependency, pinned with hashes) from
# pyproject.toml's extras; `make setup` then remakes the venv from it.
lock: setup
	.venv/bin/pip-compile --quiet --allow-unsafe --generate-hashes --strip-extras \
	  --no-emit-index-url --extra native --extra test --extra models \
	  --output-file requirements.lock.txt pyproject.toml
