#!/bin/bash
# MiniLM throughput on the H200 in one device command (docs/benchmarks.md "MiniLM"):
#   run(command="bash bench/minilm_h200.sh <commit>", carry=[".gl", ".whl", ".perfdev"])
# Locally (no GPU, no setup): bash bench/minilm_h200.sh --cpu   (cpu-python/wgpu vs torch CPU)
# Weights are random (seeded normal) for the shapes of bench/minilm_config.json, the
# checkpoint's config.json: throughput does not depend on the values, and the 90 MB checkpoint
# does not fit the 64 MiB device transfer. Prints the machine, then markdown tables of
# sentences/s (batch 1 and 32; native wgpu vs torch CUDA eager fp32 running the same BertModel +
# mean pooling + L2 norm that sentence-transformers runs, on the same token ids).
set -u
MODE=${1:-unknown}
if [ "$MODE" = "--cpu" ]; then
  export PYTHONPATH=$PWD/pylib:$PWD GPULAB_ALLOW_SOFTWARE=1 XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  PY=${PY:-.venv/bin/python}; BACKENDS=cpu-python,wgpu; PEER=cpu; RUNS=${RUNS:-2}; OUT=${OUT:-/tmp/out}
  mkdir -p "$OUT"
else
  source bench/h200_setup.sh  # the carried loaders, wheels, node + Dawn
  PY=python3; BACKENDS=wgpu; PEER=cuda; RUNS=20
fi
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
{
log "machine, $MODE"
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
nproc; $PY --version
$PY -c "import torch, wgpu; print('torch', torch.__version__, 'wgpu', wgpu.__version__, 'cuda', torch.cuda.is_available())"
log "f32, 32 tokens per sentence"
$PY bench/minilm_bench.py --random-weights --backends $BACKENDS --peer $PEER --batches 1,32 \
  --length 32 --runs $RUNS; echo "exit $?"
log "f32, 128 tokens per sentence, batch 8 (1024 tokens: the protocol's element limit)"
$PY bench/minilm_bench.py --random-weights --backends $BACKENDS --peer $PEER --batches 8 \
  --length 128 --runs $RUNS; echo "exit $?"
log "q6_k linear weights (matmul_q), 32 tokens per sentence"
$PY bench/minilm_bench.py --random-weights --quantize q6_k --backends $BACKENDS --peer none \
  --batches 1,32 --length 32 --runs $RUNS; echo "exit $?"
log "end"
} 2>&1 | tee "$OUT/minilm_h200.log"
