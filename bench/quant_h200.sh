#!/bin/bash
# The quantized matmul on the H200 in one device command (docs/benchmarks.md "Quantized matmul"):
#   run(command="bash bench/quant_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# bench/h200_setup.sh unpacks the carried folders (Vulkan loader debs, wgpu wheels, node + Dawn).
# Prints the machine, then bench/quant_matmul.py's table (wgpu q4_k matmul_q vs torch fp32
# cuBLAS, TF32 off, same process), then the quantized ops' corpus on wgpu and node-webgpu (Dawn).
set -u
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders, wheels, node + Dawn
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
{
log "machine, commit $COMMIT"
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
nproc; python3 --version
python3 -c "import torch, wgpu; print('torch', torch.__version__, 'wgpu', wgpu.__version__)"
log "q4_k matmul_q (wgpu) vs fp32 cuBLAS (torch), bench/quant_matmul.py"
python3 bench/quant_matmul.py --reps 200 --batches 1,2,4,8,16 --json "$OUT/quant.json"
echo "quant_matmul exit $?"
python3 bench/quant_matmul.py --kind q6_k --reps 200 --batches 1,4,16 --json "$OUT/quant_q6k.json" \
  | grep "^|"; echo "quant_matmul q6_k exit ${PIPESTATUS[0]}"
echo "kernels forced (no torch rows): matmul_q4k_vec / _q6k_vec QL:UNROLL, the general kernel's k-split"
python3 bench/quant_matmul.py --reps 200 --no-torch --batches 1,5,6,8 \
  --variants "${QUANT_VARIANTS:-vec:8:2,vec:16:1,vec:16:2,vec:32:2,split:2}" | grep "^|"
python3 bench/quant_matmul.py --kind q6_k --reps 200 --no-torch --batches 1,5,8 \
  --variants "${QUANT6_VARIANTS:-vec:8:1,vec:16:1,vec:32:1,split:2}" | grep "^|"
log "the quantized ops' corpus on wgpu and node-webgpu (Dawn)"
python3 -m gpulab.conformance --executor wgpu --executor node-webgpu --op matmul_q \
  --op dequantize --op matmul_fixed --report "$OUT/conf" > "$OUT/conf.txt" 2>&1
echo "conformance exit $?"
grep -E "Verdict|^\| (executor|wgpu|node-webgpu|matmul_q|dequantize|matmul_fixed) " "$OUT/conf/conformance.md"
log "end"
} 2>&1 | tee "$OUT/quant_h200.log"
