#!/bin/bash
# Cost curves on the lent H200: `gpulab bench --sweep`, the MLP Adam step (float32) at
# hidden 256/1024/4096 x batch 64/512/4096, 784-h-10 and 784-h-h-h-10, on wgpu (Vulkan) against
# PyTorch eager and CUDA graph (TF32 off). Prints the markdown table and the target check;
# writes $OUT/sweep.json, $OUT/sweep.png and the per-point log $OUT/sweep.err. Then what bounds
# the largest points gpulab runs: per-dispatch GPU timestamps next to cuBLAS fp32 on the same
# matmul shapes (bench/sweep_profile.py, $OUT/sweep_profile.md).
#   run(command="bash bench/sweep_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
#   bash bench/sweep_h200.sh --cpu    # here: a tiny sweep on lavapipe against PyTorch CPU
set -u
if [ "${1:-}" = "--cpu" ]; then
  PY=${PY:-.venv/bin/python}
  OUT=${OUT:-/tmp/sweep_out}; mkdir -p "$OUT"
  # one torch thread: on a shared 2-core machine its OpenMP pool spins against lavapipe
  export PYTHONPATH=$PWD/pylib:$PWD XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} OMP_NUM_THREADS=1
  "$PY" -m gpulab bench --sweep --backends wgpu --allow-software --torch-device cpu \
    --sizes 16,64 --batches 8,32 --json "$OUT/sweep.json" --png "$OUT/sweep.png" || exit 1
  exec "$PY" bench/sweep_profile.py --point 2x16x8 --allow-software --no-torch --runs 2
fi
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders and wgpu wheels; OUT
echo "== gpulab bench --sweep, commit $COMMIT ($(date -u +%H:%M:%S))"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
python3 -c "import torch, wgpu, matplotlib; print('torch', torch.__version__, 'wgpu', \
wgpu.__version__, 'matplotlib', matplotlib.__version__)"
start=$(date +%s)
# bounded: the JSON is written after every point, so a sweep cut short still reports
timeout "${SWEEP_TIMEOUT:-420}" python3 -m gpulab bench --sweep --backends wgpu --torch-device cuda \
  --json "$OUT/sweep.json" --png "$OUT/sweep.png" 2>"$OUT/sweep.err" | tee "$OUT/sweep.md"
rc=${PIPESTATUS[0]}
echo "exit $rc, $(( $(date +%s) - start )) s"
if [ "$rc" = 124 ] && [ -f "$OUT/sweep.json" ]; then
  echo "timed out: the points done so far"
  python3 -m gpulab bench --sweep --report "$OUT/sweep.json" --png "$OUT/sweep.png" | tee "$OUT/sweep.md"
fi
cat "$OUT/sweep.err" | grep -iv warn | tail -30
echo "== per-dispatch timestamps of the largest points vs cuBLAS ($(date -u +%H:%M:%S))"
timeout 120 python3 bench/sweep_profile.py --point 2x4096x4096 --point 4x1024x4096 --runs 10 \
  2>&1 | tee "$OUT/sweep_profile.md"
echo "== end ($(date -u +%H:%M:%S))"
