#!/bin/bash
# The map fusion on the lent H200 in one device command (docs/benchmarks.md):
#   run(command="bash bench/archive/fusion_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# The whole corpus on wgpu and node-webgpu, then the MLP step (15 dispatches fused, 20 with
# bench/archive/unfused.py) in interleaved rounds: gpulab bench (wgpu vs torch CUDA eager + graph) and
# bench/execute_mlp.py, then node + Dawn's MLP (fused) and bench/native_lab.py's pass figures.
set -u
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders, wheels, node + Dawn
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
{
log "machine, commit $COMMIT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
log "conformance: wgpu and node-webgpu (Dawn), the whole corpus"
python3 -m gpulab.conformance --executor wgpu --executor node-webgpu --report "$OUT/conf" \
  > "$OUT/conf.txt" 2>&1; echo "conformance exit $?"
grep -E "Verdict|^\| (wgpu|node-webgpu) " "$OUT/conf/conformance.md" | head -4
RUNS=${RUNS:-30}
for round in 1 2; do
  log "round $round: gpulab bench fused, then unfused"
  python3 -m gpulab bench --backends wgpu --torch-device cuda --runs "$RUNS" | grep "^|"
  python3 bench/archive/unfused.py -m gpulab bench --backends wgpu --torch-device cuda --runs "$RUNS" \
    | grep "^|"
  log "round $round: execute_mlp fused, then unfused"
  python3 bench/execute_mlp.py --backend wgpu --runs 50 | tail -2
  python3 bench/archive/unfused.py bench/execute_mlp.py --backend wgpu --runs 50 | tail -2
done
log "node + Dawn MLP (bench/dawn/mlp.mjs), fused"
python3 -c 'import json; from gpulab.benchmarks.browser import fixture; print(json.dumps(fixture(0)))' \
  > /tmp/mlp_fixture.json
/tmp/node --import ./pylib/gpulab/conformance/dawn_setup.mjs bench/dawn/mlp.mjs --fixture /tmp/mlp_fixture.json \
  --runs 50 | tail -6; echo "dawn mlp exit $?"
log "native_lab (dispatch-bound figures), fused then unfused"
PICK="^==|sum of|one pass|empty|session run|carry|dispatches only"
python3 bench/native_lab.py --skip variants,small 2>&1 | grep -E "$PICK"
python3 bench/archive/unfused.py bench/native_lab.py --skip variants,small 2>&1 | grep -E "$PICK"
log "end"
} 2>&1 | tee "$OUT/fusion_h200.log"
