#!/bin/bash
# The compiled training step on the lent H200: gpulab.torch's torch.compile(step, training=True)
# on wgpu (Vulkan on the H200) against eager PyTorch on CUDA, the seed's step (784-256-10 MLP,
# batch 64, Adam): per compiled call, per prepared.step, per step at 8 steps per steps()
# (bench/torch_step.py). Prints a markdown table.
#   run(command="bash bench/torch_step_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
#   bash bench/torch_step_h200.sh --cpu     # here: cpu-python against PyTorch on the CPU
set -u
if [ "${1:-}" = "--cpu" ]; then
  PY=${PY:-.venv/bin/python}
  # one torch thread: on a shared 2-core machine its OpenMP pool spins against numpy
  export PYTHONPATH=$PWD/pylib:$PWD XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} OMP_NUM_THREADS=1
  exec "$PY" bench/torch_step.py --backend cpu-python --torch-device cpu --runs 5
fi
COMMIT=${1:-unknown}
source bench/h200_setup.sh  # the carried loaders and wgpu wheels; OUT
echo "== torch.compile step bench, commit $COMMIT ($(date -u +%H:%M:%S))"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, wgpu; print('torch', torch.__version__, 'wgpu', wgpu.__version__)"
python3 -m gpulab doctor 2>&1 | head -12
python3 bench/torch_step.py --backend wgpu --torch-device cuda --runs 20 \
  2>"$OUT/torch_step.err" | tee "$OUT/torch_step.md"
echo "exit ${PIPESTATUS[0]}"
grep -v "^$" "$OUT/torch_step.err" | grep -iv warn | tail -20
