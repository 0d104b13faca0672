#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks, idempotently: Debian packages (Chromium for the
# browser lanes, Firefox ESR + Xvfb for the Firefox lane, lavapipe for the native software lane,
# rustc for kernels.wasm), a Python venv made from requirements.lock.txt (every Python package at
# the version and hash tested; gpulab itself editable on top, without dependencies), and the npm
# dev dependencies from package-lock.json with `npm ci` (Pyodide core, TensorFlow.js peers, the
# notebook's browser libraries). Refresh the Python lock with `make lock`.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# the Firefox lane (e2e/firefox_lane.py): Debian's Firefox ESR on a virtual X display
[ -x /usr/bin/firefox-esr ] || need_apt+=(firefox-esr)
[ -x /usr/bin/Xvfb ] || need_apt+=(xvfb)
[ -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] || [ -n "$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null)" ] || need_apt+=(mesa-vulkan-drivers)
[ -x /usr/bin/rustc ] || need_apt+=(rustc)
[ -d /usr/lib/rustlib/wasm32-unknown-unknown ] || need_apt+=(libstd-rust-dev-wasm32)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The venv is made from the lock and nothing else: when the lock changes, it is made anew, so no
# package of an earlier lock stays behind (pylib/tests/test_lock.py checks installed == locked).
LOCK=requirements.lock.txt
want="$(sha256sum "$LOCK" | cut -c1-64)"
if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.gpulab-lock 2>/dev/null)" != "$want" ]; then
  rm -rf .venv
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --require-hashes --no-deps -r "$LOCK"
  echo "$want" > .venv/.gpulab-lock
fi
# gpulab itself: editable, its dependencies are the lock's; setuptools (the build backend) too
editable=.venv/.gpulab-editable
if [ ! -f "$editable" ] || [ pyproject.toml -nt "$editable" ] || [ setup.py -nt "$editable" ]; then
  .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
  touch "$editable"
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# The micropip wheel for the offline playground (served next to the Pyodide core). 0.11.1 is
# the version Pyodide 314's own lock names: 0.7.2 imports `packaging`, which we do not serve.
# --python-version: the venv's Python may be older than Pyodide's 3.14.
mkdir -p web/vendor/wheels
if [ ! -f web/vendor/wheels/micropip-0.11.1-py3-none-any.whl ]; then
  .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.14 \
    -d web/vendor/wheels "micropip==0.11.1"
fi
