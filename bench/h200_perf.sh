#!/bin/bash
# The MLP step's measurements on the lent H200, in one device command (docs/benchmarks.md,
# "MLP training step, native on the H200"):
#   run(command="bash bench/h200_perf.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# Carried (git-excluded folders of the checkout, made on the development machine):
#   .gl        Vulkan/EGL loader debs (the device README's "Headless rendering")
#   .whl       wgpu 0.32.0, cffi, pycparser, rendercanvas, sniffio wheels for Python 3.12
#   .perfdev   node.xz (this machine's /usr/bin/node, xz), dawn.node.xz (npm webgpu 0.6.2's
#              dist/linux-x64/dawn.node, xz) and webgpu/{index.js,package.json} of that package
# Writes logs and JSON under $OUT; prints the tables last.
set -u
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders, wheels, node + Dawn
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
{
log "machine, commit $COMMIT"
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
nproc; python3 --version; /tmp/node --version
python3 -c "import torch, wgpu; print('torch', torch.__version__, 'wgpu', wgpu.__version__)"
log "conformance: wgpu and node-webgpu (Dawn), the whole corpus"
python3 -m gpulab.conformance --executor wgpu --executor node-webgpu --report "$OUT/conf" \
  > "$OUT/conf.txt" 2>&1; echo "conformance exit $?"
head -8 "$OUT/conf/conformance.md"
log "native MLP: gpulab bench, wgpu vs torch cuda eager + graph"
python3 -m gpulab bench --backends wgpu --torch-device cuda --runs 50 --json "$OUT/bench.json"
python3 -m gpulab bench --backends wgpu --torch-device cuda --runs 50  # the spread between runs
log "execute alone (bench/execute_mlp.py): plan cache on"
python3 bench/execute_mlp.py --backend wgpu --runs 50
python3 bench/execute_mlp.py --backend wgpu --runs 50 --profile 20 | head -32
log "node + Dawn MLP (bench/dawn/mlp.mjs)"
python3 -c 'import json; from gpulab.benchmarks.browser import fixture; print(json.dumps(fixture(0)))' \
  > /tmp/mlp_fixture.json
/tmp/node --import ./pylib/gpulab/conformance/dawn_setup.mjs bench/dawn/mlp.mjs --fixture /tmp/mlp_fixture.json \
  --runs 50 --json "$OUT/dawn_mlp.json"; echo "dawn mlp exit $?"
log "execute phase by phase (bench/execute_phases.py)"
python3 bench/execute_phases.py --runs 50
if [ -z "${SKIP_SGEMM:-}" ]; then  # h200_final.sh runs bench/sgemm_h200.sh instead
log "SGEMM through the JS backend under node + Dawn (Tint)"
/tmp/node --import ./pylib/gpulab/conformance/dawn_setup.mjs bench/dawn/sgemm.mjs --sizes 4096,4000 --reps 20
echo "the same with Dawn's robustness off (a measurement: pages cannot do this)"
GPULAB_DAWN_FLAGS=enable-dawn-features=disable_robustness /tmp/node --import ./pylib/gpulab/conformance/dawn_setup.mjs \
  bench/dawn/sgemm.mjs --sizes 4096,4000 --reps 20
log "SGEMM: our WGSL (wgpu-py, naga) vs cuBLAS fp32 (TF32 off)"
for n in 4096 4000; do python3 -m gpulab.native.bench_matmul --size $n --reps 50; done
for s in 4097,4096,4095 8192,1024,8192 4096,4095,4096; do
  python3 -m gpulab.native.bench_matmul --shape $s --reps 20; done
python3 -m gpulab.native.bench_matmul --size 4096 --reps 20 --kernel matmul_rb
python3 bench/cublas_shapes.py --reps 50
fi
log "dispatch bound (bench/native_lab.py --skip variants,small)"
python3 bench/native_lab.py --skip variants,small
log "end"
} 2>&1 | tee "$OUT/h200.log"
