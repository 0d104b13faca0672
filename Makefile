# The two entry points of the README: `make serve` (the playground) and `make test` (everything).
PY := .venv/bin/python
export XDG_RUNTIME_DIR ?= /tmp

.PHONY: setup serve test test-js test-py gen gen-check sync lint

setup:
	@bash scripts/setup.sh

serve: setup
	$(PY) -m gpulab serve --host 127.0.0.1 --port 8000

test: setup
	node --test backends-js/test/
	$(PY) -m pytest -q

test-js:
	node --test backends-js/test/

test-py:
	$(PY) -m pytest -q

lint:
	$(PY) -m ruff check pylib e2e bench

# Every generated file (package copies, templated kernels, corpus, docs tables, kernels.wasm):
# scripts/gen.py. gen-check writes nothing and fails if anything is stale.
gen:
	$(PY) scripts/gen.py

gen-check:
	$(PY) scripts/gen.py --check

# The package-copy step of gen alone (the old `make sync`).
sync:
	$(PY) scripts/gen.py --copies
