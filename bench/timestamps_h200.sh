#!/bin/bash
# GPU timestamps of the MLP step's plan (bench/gpu_timestamps.py) on the lent H200, one call:
#   run(command="bash bench/timestamps_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# (the carried folders as in bench/h200_perf.sh's header). Prints markdown: per dispatch GPU us,
# the pass's GPU total, host encode, submit -> done, an empty chain of as many dispatches, for 1
# and 8 steps per submission; then bench/execute_phases.py (where execute's time goes).
# Here (lavapipe, software): python bench/gpu_timestamps.py --runs 5 --allow-software
set -u
COMMIT=${1:-unknown}
RUNS=${RUNS:-50}
source bench/h200_setup.sh  # the carried loaders and wheels
{
echo "== machine, commit $COMMIT ($(date -u +%H:%M:%S))"
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
nproc; python3 --version
python3 -c "import wgpu; print('wgpu', wgpu.__version__)"
echo "== bench/gpu_timestamps.py --runs $RUNS ($(date -u +%H:%M:%S))"
python3 bench/gpu_timestamps.py --runs "$RUNS"
echo "== the same again (the spread within one VM) ($(date -u +%H:%M:%S))"
python3 bench/gpu_timestamps.py --runs "$RUNS"
echo "== bench/execute_phases.py --runs $RUNS ($(date -u +%H:%M:%S))"
python3 bench/execute_phases.py --runs "$RUNS"
echo "== end ($(date -u +%H:%M:%S))"
} 2>&1 | tee "$OUT/timestamps.log"
