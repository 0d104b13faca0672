# Sourced by the H200 device scripts (bench/*_h200.sh, h200_perf.sh; bench/README.md): unpacks the
# carried folders of the checkout (.gl: Vulkan/EGL loader debs; .whl: wgpu-py and its wheels for
# Python 3.12; .perfdev: node and npm webgpu's dawn.node, xz) and exports what the lanes need.
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
