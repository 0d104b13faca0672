#!/bin/bash
# The matmul epilogue on the lent H200 in one device command (docs/benchmarks.md):
#   run(command="bash bench/archive/epilogue_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
#   bash bench/archive/epilogue_h200.sh --cpu    # here, on lavapipe (software: correctness, not speed)
# The whole corpus on wgpu and node-webgpu, then the MLP step with the matmul epilogue and
# without it (`bench/archive/unfused.py --epilogue`: every other fusion stays; 15 vs 18 dispatches
# before planner_multi, the counts printed first) in interleaved rounds:
# gpulab bench (wgpu vs torch CUDA eager + graph),
# bench/execute_mlp.py, node + Dawn's MLP (the JS planner's same plan) and
# bench/native_lab.py's pass figures. Prints markdown lines and `==` headers.
set -u
count_steps() {  # the MLP step's dispatch count as the planner makes it, epilogue on / off
  python3 - "$@" <<'PY'
import sys
from gpulab.models.mlp import init, step_graph
from gpulab.native import planner, planner_epilogue
from gpulab.protocol import validate
if sys.argv[1:] == ["off"]:
    planner_epilogue.EPILOGUE_MAP2.clear()
step = step_graph(init(0))
plan = planner.plan_graph(validate(step.graph._graph_dict(step.outputs())))
print("MLP step dispatches:", len(plan["steps"]), "(epilogue", sys.argv[1] + ")")
PY
}
if [ "${1:-}" = "--cpu" ]; then
  export PYTHONPATH=$PWD/pylib:$PWD XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  export GPULAB_ALLOW_SOFTWARE=1 PATH=$PWD/.venv/bin:$PATH
  count_steps on; count_steps off
  python3 -m gpulab.conformance --allow-software --executor wgpu --op matmul --op chain \
    --report /tmp/epilogue_conf | grep -E "Verdict|^\| (matmul|chain) "
  python3 bench/execute_mlp.py --backend wgpu --runs 3 | tail -2
  python3 bench/archive/unfused.py --epilogue bench/execute_mlp.py --backend wgpu --runs 3 | tail -2
  exit 0
fi
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders, wheels, node + Dawn; OUT
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
{
log "machine, commit $COMMIT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
count_steps on; count_steps off
log "conformance: wgpu and node-webgpu (Dawn), the whole corpus"
python3 -m gpulab.conformance --executor wgpu --executor node-webgpu --report "$OUT/conf" \
  > "$OUT/conf.txt" 2>&1; echo "conformance exit $?"
grep -E "Verdict|^\| (wgpu|node-webgpu) " "$OUT/conf/conformance.md" | head -4
grep -E "^\| (matmul|chain) " "$OUT/conf/conformance.md"
RUNS=${RUNS:-30}
for round in 1 2; do
  log "round $round: gpulab bench with the epilogue, then without"
  python3 -m gpulab bench --backends wgpu --torch-device cuda --runs "$RUNS" | grep "^|"
  python3 bench/archive/unfused.py --epilogue -m gpulab bench --backends wgpu --torch-device cuda \
    --runs "$RUNS" | grep "^|"
  log "round $round: execute_mlp with, then without"
  python3 bench/execute_mlp.py --backend wgpu --runs 50 | tail -2
  python3 bench/archive/unfused.py --epilogue bench/execute_mlp.py --backend wgpu --runs 50 | tail -2
done
log "node + Dawn MLP (bench/dawn/mlp.mjs), with the epilogue"
python3 -c 'import json; from gpulab.benchmarks.browser import fixture; print(json.dumps(fixture(0)))' \
  > /tmp/mlp_fixture.json
/tmp/node --import ./pylib/gpulab/conformance/dawn_setup.mjs bench/dawn/mlp.mjs --fixture /tmp/mlp_fixture.json \
  --runs 50 | tail -6; echo "dawn mlp exit $?"
log "native_lab (dispatch-bound figures), with then without"
PICK="^==|sum of|one pass|empty|session run|carry|dispatches only"
python3 bench/native_lab.py --skip variants,small 2>&1 | grep -E "$PICK"
python3 bench/archive/unfused.py --epilogue bench/native_lab.py --skip variants,small 2>&1 | grep -E "$PICK"
log "end"
} 2>&1 | tee "$OUT/epilogue_h200.log"
