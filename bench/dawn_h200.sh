#!/bin/bash
# The JS WebGPU backend under node + Dawn on the lent H200, in one device command
# (docs/benchmarks.md "MLP training step, the JS WebGPU backend under node + Dawn"):
#   run(command="bash bench/dawn_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# (the carried folders: bench/h200_perf.sh's header). Prints markdown:
# 1. the node-webgpu conformance lane (the whole corpus, hardware adapter);
# 2. bench/dawn/mlp.mjs's table (execute, 1 step, 8 steps per step), with interleaved A/B
#    rounds of the run paths where mlp.mjs has --ab (DAWN_ROUNDS rounds, default 3);
# 3. bench/dawn/mlp.mjs --profile: every WebGPU call of a run counted and timed on the host,
#    every compute pass timestamped on the GPU (Dawn's timestamp quantization off), for the
#    default run path and the old one; a host-only profile; the table with Dawn's
#    skip_validation toggle (what validation costs the host).
# Local smoke test (Dawn's null backend: the host side only, no GPU work, losses 0):
#   GPULAB_DAWN=<npm webgpu>/index.js DAWN_LOCAL=1 bash bench/dawn_h200.sh local
set -u
COMMIT=${1:-unknown}
if [ -z "${DAWN_LOCAL:-}" ]; then
  source bench/h200_setup.sh  # the carried loaders, wheels, node + Dawn
  BASE_FLAGS=""
else
  export NODE=${NODE:-node} OUT=${OUT:-/tmp/dawn_out}; mkdir -p "$OUT"
  BASE_FLAGS="backend=null"
fi
RUNS=${RUNS:-50}
ROUNDS=${DAWN_ROUNDS:-3}
log() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
mlp() { GPULAB_DAWN_FLAGS="$BASE_FLAGS ${FLAGS:-}" "$NODE" --import ./pylib/gpulab/conformance/dawn_setup.mjs \
  bench/dawn/mlp.mjs --fixture /tmp/mlp_fixture.json "$@"; }
{
log "machine, commit $COMMIT"
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
"$NODE" --version
python3 -c 'import json; from gpulab.benchmarks.browser import fixture; print(json.dumps(fixture(0)))' \
  > /tmp/mlp_fixture.json
if [ -z "${DAWN_LOCAL:-}" ] && [ -z "${DAWN_SKIP_CONFORMANCE:-}" ]; then  # h200_final.sh runs it once
  log "conformance: node-webgpu (Dawn), the whole corpus"
  python3 -m gpulab.conformance --executor node-webgpu --report "$OUT/conf" > "$OUT/conf.txt" 2>&1
  echo "conformance exit $?"
  grep -E "Verdict|^\| node-webgpu " "$OUT/conf/conformance.md" | head -3
fi
log "node + Dawn MLP (bench/dawn/mlp.mjs --runs $RUNS)"
mlp --runs "$RUNS" --json "$OUT/dawn_mlp.json"; echo "dawn mlp exit $?"
if grep -q -- "--ab" bench/dawn/mlp.mjs; then
  log "A/B: the run paths in $ROUNDS interleaved rounds (bench/dawn/mlp.mjs --ab)"
  mlp --ab --runs "$RUNS" --rounds "$ROUNDS"; echo "dawn ab exit $?"
fi
log "profile (bench/dawn/mlp.mjs --profile 30, timestamp quantization off)"
FLAGS="disable-dawn-features=timestamp_quantization" mlp --profile 30; echo "profile exit $?"
if grep -q -- "--ab" bench/dawn/mlp.mjs; then
  log "profile of the old run path (GPULAB_DAWN_RUN=old)"
  GPULAB_DAWN_RUN=old FLAGS="disable-dawn-features=timestamp_quantization" mlp --profile 30
fi
log "host-only profile (no timestamp queries: GPULAB_DAWN_TIMESTAMPS=0)"
GPULAB_DAWN_TIMESTAMPS=0 mlp --profile 30 | grep -E "wall|calls, all|submit|less the calls|session JS"
log "the table again, and the A/B after 53 executes (is the table's process slower for them?)"
mlp --runs "$RUNS" | grep -E "^\| gpu-lab"
mlp --ab --runs "$RUNS" --rounds 1 --execute-first 53 | grep -E "executes|\| (new|old) \|"
log "Dawn's validation off (skip_validation: a measurement of its host cost; pages cannot)"
FLAGS="enable-dawn-features=skip_validation" mlp --runs "$RUNS" | grep -E "^\| gpu-lab"
FLAGS="enable-dawn-features=skip_validation" mlp --ab --runs "$RUNS" --rounds 1 | grep -E "\| (new|old) \|" 
log "end"
} 2>&1 | tee "$OUT/dawn_h200.log"
