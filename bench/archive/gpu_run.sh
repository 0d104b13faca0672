for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/pylib:$PWD
python3 -m gpulab.conformance --executor wgpu --report $OUT/conf 2>&1 | tail -40
python3 -m gpulab.native.bench_matmul --size 4096 --reps 20
python3 -m gpulab.native.bench_matmul --size 4096 --reps 10 --kernel matmul
python3 -m gpulab bench --backends wgpu --torch-device cuda --runs 30 --json $OUT/bench.json
