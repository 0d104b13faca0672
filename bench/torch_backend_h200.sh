#!/bin/bash
# The dynamo backend on the lent H200: torch.compile(model, backend="gpulab") (its graphs on
# wgpu: Vulkan on the H200) vs torch.compile's default (inductor) and eager CUDA, on the MLP
# training step and a MiniLM-sized encoder block (bench/torch_backend.py); prints a markdown table.
#   run(command="bash bench/torch_backend_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
#   bash bench/torch_backend_h200.sh --cpu     # here: CPU torch, cpu-python, small shapes
set -u
if [ "${1:-}" = "--cpu" ]; then
  PY=${PY:-.venv/bin/python}
  # one torch thread: on a shared 2-core machine its OpenMP pool spins against numpy
  export PYTHONPATH=$PWD/pylib:$PWD XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} OMP_NUM_THREADS=1
  exec "$PY" bench/torch_backend.py --device cpu --backend cpu-python --small --runs 3 \
    --paths eager,gpulab
fi
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders and wgpu wheels; OUT
echo "== torch backend bench, commit $COMMIT ($(date -u +%H:%M:%S))"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, wgpu; print('torch', torch.__version__, 'wgpu', wgpu.__version__)"
python3 -m gpulab doctor 2>&1 | head -12
python3 bench/torch_backend.py --device cuda --backend wgpu --runs 20 2>"$OUT/torch_backend.err" \
  | tee "$OUT/torch_backend.md"
echo "exit ${PIPESTATUS[0]}"
grep -v "^$" "$OUT/torch_backend.err" | grep -iv warn | tail -20
