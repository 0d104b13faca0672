#!/bin/bash
# The ops added on 2026-12-01, on the lent H200 in one device command: the whole corpus on wgpu
# (Vulkan, NVIDIA) and node-webgpu (Dawn), and the native live-view path
# (bench/archive/live_views.py --native).
#   run(command="bash bench/archive/h200_check.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# bench/h200_setup.sh unpacks the carried folders (shared with h200_perf.sh, quant_h200.sh).
set -u
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders, wheels, node + Dawn
echo "== machine, commit $COMMIT"; date -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== conformance: wgpu and node-webgpu (Dawn), the whole corpus"
python3 -m gpulab.conformance --executor wgpu --executor node-webgpu --report "$OUT/conf" \
  > "$OUT/conf.txt" 2>&1; echo "conformance exit $?"
head -12 "$OUT/conf/conformance.md"; grep -iE "fail|differ" "$OUT/conf/conformance.md" | head -20
echo "== live views, native path"
python3 bench/archive/live_views.py --native --seconds 4 2>&1 | tail -8
