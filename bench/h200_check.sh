#!/bin/bash
# Wave-2 ops on the lent H200 in one device command: the whole corpus on wgpu (Vulkan, NVIDIA)
# and node-webgpu (Dawn), and the native live-view path (bench/live_views.py --native).
#   run(command="bash bench/h200_check.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# The carried folders are bench/h200_perf.sh's (the same set-up lines).
set -u
COMMIT=${1:-unknown}
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/pylib:$PWD
xz -dc .perfdev/node.xz > /tmp/node && chmod +x /tmp/node
mkdir -p /tmp/webgpu/dist/linux-x64 && cp .perfdev/webgpu/index.js .perfdev/webgpu/package.json /tmp/webgpu/
xz -dc .perfdev/dawn.node.xz > /tmp/webgpu/dist/linux-x64/dawn.node
export NODE=/tmp/node GPULAB_DAWN=/tmp/webgpu/index.js PATH=/tmp:$PATH
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "== machine, commit $COMMIT"; date -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== conformance: wgpu and node-webgpu (Dawn), the whole corpus"
python3 -m e2e.conformance --executor wgpu --executor node-webgpu --report "$OUT/conf" \
  > "$OUT/conf.txt" 2>&1; echo "conformance exit $?"
head -12 "$OUT/conf/conformance.md"; grep -iE "fail|differ" "$OUT/conf/conformance.md" | head -20
echo "== live views, native path"
python3 bench/live_views.py --native --seconds 4 2>&1 | tail -8
