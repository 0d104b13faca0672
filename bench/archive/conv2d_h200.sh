#!/bin/bash
# The conv2d measurement on the lent H200 in one device command (the lead runs it):
#   run(command="bash bench/archive/conv2d_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
#   bash bench/archive/conv2d_h200.sh --cpu      # here: no device, the small shapes on cpu-python + torch CPU
# Prints the machine, then bench/archive/conv2d.py's markdown table: the conv2d op (wgpu on the
# NVIDIA Vulkan driver: im2col + the tiled matmul where that plan applies, else the direct
# kernel) against the im2col composite of gpulab.functional, and torch's cuDNN conv (TF32 off)
# for the same shapes; then the v6 corpus on wgpu and node-webgpu (Dawn).
set -u
if [ "${1:-}" = "--cpu" ]; then
  python3 bench/archive/conv2d.py --lanes cpu-python,torch --shapes small --reps 2
  exit $?
fi
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders, wheels, node + Dawn
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
{
log "machine, commit $COMMIT"
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
python3 -c "import torch, wgpu; print('torch', torch.__version__, 'wgpu', wgpu.__version__)"
log "conv2d: the op vs the im2col composite (wgpu), torch cuDNN; bench/archive/conv2d.py"
python3 bench/archive/conv2d.py --lanes wgpu,torch --shapes large --reps 20
echo "conv2d large exit $?"
python3 bench/archive/conv2d.py --lanes wgpu,torch --shapes small --reps 20
echo "conv2d small exit $?"
log "the v6 corpus on wgpu and node-webgpu (Dawn)"
python3 -m gpulab.conformance --lane wgpu,node-webgpu --cases 'conv2d,max_pool2d,avg_pool2d,resize,chain/v6*' \
  --report "$OUT/conf" > "$OUT/conf.txt" 2>&1
echo "conformance exit $?"
grep -E "Verdict|^\| (conv2d|max_pool2d|avg_pool2d|resize|chain) " "$OUT/conf/conformance.md"
log "end"
} 2>&1 | tee "$OUT/conv2d_h200.log"
