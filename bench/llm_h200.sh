#!/bin/bash
# The language model's throughput on the GPU machine in one device command (docs/llm.md
# "Performance"):
#   run(command="bash bench/llm_h200.sh", carry=[".gl", ".whl", ".perfdev"])
# `.whl` must hold gguf-py's wheel (gguf==0.19.0, pure Python: `pip download --no-deps gguf==0.19.0
# -d .whl`) next to wgpu-py's: the script writes the GGUF files there (a SmolLM2-135M-shaped Q4_0
# file is about 75 MiB, past the 64 MiB transfer). transformers and torch are the machine's.
# Locally (no GPU): bash bench/llm_h200.sh --cpu   (cpu-python / wgpu on lavapipe vs torch CPU,
# and llama.cpp when `llama_cpp` is importable).
# Prints the machine, then markdown tables: prefill / decode tok/s at k = 1, 4, 16 tokens per
# submission, natively (wgpu) against transformers fp32 generate (KV cache, eager).
set -u
MODE=${1:-gpu}
if [ "$MODE" = "--cpu" ]; then
  export PYTHONPATH=$PWD/pylib:$PWD GPULAB_ALLOW_SOFTWARE=1 XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  PY=${PY:-.venv/bin/python}; BACKENDS=${BACKENDS:-cpu-python,wgpu}; PEER=cpu; RUNS=${RUNS:-2}
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
else
  source bench/h200_setup.sh  # the carried loaders, wheels (gguf-py among them), node + Dawn
  PY=python3; BACKENDS=wgpu; PEER=cuda; RUNS=5
fi
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
{
log "machine, $MODE"
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
nproc; $PY --version
$PY -c "import torch, transformers, gguf; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())"
log "SmolLM2-135M shapes, Q4_0 and Q8_0, prompt 32, 64 new tokens"
$PY bench/llm.py --backends $BACKENDS --peer $PEER --quant Q4_0,Q8_0 --chunks 1,4,16 \
  --prompt 32 --new 64 --runs $RUNS --json "$OUT/llm.json"; echo "exit $?"
log "end"
} 2>&1 | tee "$OUT/llm_h200.log"
