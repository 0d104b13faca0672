#!/bin/bash
# The multi-node dispatches (planner_multi.py: multi-tensor Adam, the cross-entropy pair)
# on the lent H200 in one device command (docs/benchmarks.md), prints markdown:
#   run(command="bash bench/archive/fusestep_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
#   bash bench/archive/fusestep_h200.sh --cpu    # here: the same arms on lavapipe (wgpu), no torch/Dawn
# The MLP step (784-256-10, Adam, batch 64) in three arms, interleaved rounds: fused (11
# dispatches), GPULAB_UNFUSE=multi (15: the map fusion and the matmul epilogue, without
# planner_multi) and map, epilogue and multi off (20), each by gpulab bench and native_lab.py; then
# node + Dawn's MLP (the JS WebGPU backend, planner-multi.mjs) with the adapter's storage-buffer
# limit, which decides how many Adam parameters one dispatch takes (7 each + 1).
set -u
if [ "${1:-}" = "--cpu" ]; then
  PY=${PY:-.venv/bin/python}
  export PYTHONPATH=$PWD/pylib:$PWD XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  RUNS=${RUNS:-3}
  for arm in none multi map,epilogue,multi; do
    echo "== arm: off=$arm"
    GPULAB_UNFUSE=$arm "$PY" bench/archive/unfused.py -m gpulab bench --backends wgpu --allow-software \
      --torch-device none --runs "$RUNS" | grep "^|"
  done
  exit 0
fi
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders, wheels, node + Dawn; OUT
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
{
log "machine, commit $COMMIT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 - <<'PY'
from gpulab.native.wgpu_executor import open_executor
ex = open_executor(False)
print("wgpu plan limits:", ex.limits)
ex.dispose()
PY
log "conformance: wgpu and node-webgpu (Dawn), the whole corpus"
python3 -m gpulab.conformance --lane wgpu,node-webgpu --report "$OUT/conf" > "$OUT/conf.txt" 2>&1
echo "conformance exit $?"
grep -E "Verdict|^\| (wgpu|node-webgpu) " "$OUT/conf/conformance.md" | head -4
RUNS=${RUNS:-30}
for round in 1 2; do
  for arm in none multi map,epilogue,multi; do
    log "round $round, fusions off: $arm; gpulab bench"
    GPULAB_UNFUSE=$arm python3 bench/archive/unfused.py -m gpulab bench --backends wgpu \
      --torch-device cuda --runs "$RUNS" | grep "^|"
  done
done
PICK="^==|sum of|one pass|empty|session run|dispatches only"
for arm in none multi map,epilogue,multi; do
  log "native_lab, fusions off: $arm"
  GPULAB_UNFUSE=$arm python3 bench/archive/unfused.py bench/native_lab.py --skip variants,small 2>&1 \
    | grep -E "$PICK"
done
log "node + Dawn: the adapter's maxStorageBuffersPerShaderStage, then the MLP (fused)"
/tmp/node --import ./pylib/gpulab/conformance/dawn_setup.mjs --input-type=module -e '
const a = await globalThis.navigator?.gpu?.requestAdapter();
console.log("dawn adapter maxStorageBuffersPerShaderStage", a?.limits.maxStorageBuffersPerShaderStage);' 
python3 -c 'import json; from gpulab.benchmarks.browser import fixture; print(json.dumps(fixture(0)))' \
  > /tmp/mlp_fixture.json
/tmp/node --import ./pylib/gpulab/conformance/dawn_setup.mjs bench/dawn/mlp.mjs --fixture /tmp/mlp_fixture.json \
  --runs 50 | tail -6; echo "dawn mlp exit $?"
log "end"
} 2>&1 | tee "$OUT/fusestep_h200.log"
