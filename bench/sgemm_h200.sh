#!/bin/bash
# The SGEMM shapes on the lent H200 in one device command (docs/benchmarks.md "SGEMM"):
#   run(command="bash bench/sgemm_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# (.perfdev only for the node + Dawn lines; without it they are skipped.) Local smoke on
# lavapipe, small shapes, no cuBLAS: bash bench/sgemm_h200.sh --cpu
# Prints: the planned kernel per shape through the executor (gpulab.native.bench_matmul: a
# warm-up submission, then the median of 3 of 20 products each), cuBLAS fp32 (TF32 off), the
# shipped kernels timed back to back with the GPU busy and their bits checked against
# matmul.wgsl (bench/sgemm_lab.py), the matmul corpus on wgpu and node-webgpu (Tint), and
# bench/dawn/sgemm.mjs.
set -u
COMMIT=${1:-unknown}
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
if [ "$COMMIT" = "--cpu" ]; then
  export PYTHONPATH=$PWD/pylib:$PWD XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  PY=${PY:-.venv/bin/python}
  log "lavapipe smoke"
  for s in 130,36,132 131,36,130 130,35,132 129,33,131; do
    $PY -m gpulab.native.bench_matmul --shape $s --reps 2 --allow-software; done
  $PY bench/sgemm_lab.py --small --allow-software --only shipped --no-small
  exit $?
fi
source bench/h200_setup.sh > "${OUT:-/tmp/out}/setup.log" 2>&1
{
log "machine, commit $COMMIT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
log "bench_matmul: the planned kernel (M,K,N)"
for s in 4096,4096,4096 4000,4000,4000 4097,4096,4095 8192,1024,8192 4096,4095,4096 \
  4096,4095,4095; do
  timeout 90 python3 -m gpulab.native.bench_matmul --shape $s --reps 20; done
timeout 90 python3 -m gpulab.native.bench_matmul --size 4096 --reps 20 --kernel matmul_rb
log "cuBLAS fp32, TF32 off"
timeout 90 python3 bench/cublas_shapes.py --reps 30
log "the shipped kernels back to back (bench/sgemm_lab.py), bits against matmul.wgsl"
timeout 150 python3 bench/sgemm_lab.py --reps 20 --rounds 2 --only shipped --no-small \
  --json "$OUT/sgemm_lab.json" | grep -v "^{"
if [ -x /tmp/node ]; then
  log "matmul corpus: wgpu and node-webgpu (Dawn, Tint)"
  timeout 120 python3 -m gpulab.conformance --lane wgpu,node-webgpu --cases matmul \
    --report "$OUT/conf" > "$OUT/conf.txt" 2>&1; echo "conformance exit $?"
  grep -E "Verdict|^\| (wgpu|node-webgpu|matmul) " "$OUT/conf/conformance.md" | head -5
  log "node + Dawn SGEMM (bench/dawn/sgemm.mjs)"
  timeout 120 /tmp/node --import ./pylib/gpulab/conformance/dawn_setup.mjs bench/dawn/sgemm.mjs --sizes 4096,4000 \
    --reps 20
fi
log "end"
} 2>&1 | tee "$OUT/sgemm_h200.log"
