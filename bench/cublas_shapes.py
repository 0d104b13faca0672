"""cuBLAS float32 (TF32 off) through PyTorch on the SGEMM shapes of docs/benchmarks.md, the peer of
`python -m gpulab.native.bench_matmul --shape M,K,N` (GPU machine only).

    python3 bench/cublas_shapes.py [--reps 50]

Median of `--reps` products timed with CUDA events, after 3 warm-ups; uniform [0, 1) data.
"""

from __future__ import annotations

import argparse
import statistics

SHAPES = (
    (4096, 4096, 4096),
    (4000, 4000, 4000),
    (4097, 4096, 4095),
    (8192, 1024, 8192),
    (4096, 4095, 4096),
)


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=50)
    reps = ap.parse_args().reps
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for m, k, n in SHAPES:
        a = torch.rand(m, k, device="cuda")
        b = torch.rand(k, n, device="cuda")
        for _ in range(3):
            a @ b
        torch.cuda.synchronize()
        samples = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            a @ b
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end))
        ms = statistics.median(samples)
        print(
            f"cuBLAS fp32 (TF32 off) {m}x{k}x{n}: {ms:.3f} ms, "
            f"{2 * m * k * n / ms / 1e9:.1f} TFLOP/s (median of {reps})"
        )


if __name__ == "__main__":
    main()
