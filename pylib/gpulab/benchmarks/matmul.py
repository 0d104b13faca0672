"""A square float32 matmul through gpulab's own WGSL on the native wgpu executor.

`python -m gpulab.benchmarks.matmul --n 4096` prepares a session whose graph is `a @ b` (the
product stays resident) plus a 1-element output that is read back, so each `run` waits for the
GPU. The time of one product is (t(k+1 products) - t(1 product)) / k, which cancels the fixed
cost of a submission and a read-back. The product is checked against numpy (float64) on a sample
of rows. Prints JSON with TFLOP/s and the plan's matmul kernel.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np

from gpulab import Graph, host


def run(n: int, reps: int, extra: int, allow_software: bool) -> dict[str, Any]:
    host.configure(gpu=True, allow_software=allow_software)
    rng = np.random.default_rng(0)
    a_np = rng.random((n, n), dtype=np.float32)
    b_np = rng.random((n, n), dtype=np.float32)
    g = Graph()
    a, b = g.tensor(a_np), g.tensor(b_np)
    tick = g.tensor([1.0]) + 1.0
    product_t = a @ b
    session = g.prepare(resident=[product_t], backend="wgpu", tick=tick)

    def timed(steps: int) -> float:
        t0 = time.perf_counter()
        session.run_steps(steps)
        return time.perf_counter() - t0

    timed(1)
    timed(extra + 1)  # warm both shapes of the recorded commands
    one = [timed(1) for _ in range(reps)]
    many = [timed(extra + 1) for _ in range(reps)]
    per = (statistics.median(many) - statistics.median(one)) / extra
    product = np.asarray(session.download(product_t)["data"], np.float32)
    rows = rng.choice(n, size=min(n, 64), replace=False)
    ref = a_np[rows].astype(np.float64) @ b_np.astype(np.float64)
    got = product.reshape(n, n)[rows]
    rel = float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)))
    stats = session.run_steps(1)["stats"]
    session.dispose()
    return {
        "mode": f"gpulab WGSL matmul fp32 {n}^3 (wgpu)",
        "ms_per_product": per * 1e3,
        "tflops": 2 * n**3 / per / 1e12,
        "max_rel_err_sampled_rows": rel,
        "adapter": stats.get("adapter"),
        "reps": reps,
        "products_per_run": extra + 1,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--extra", type=int, default=10)
    ap.add_argument("--allow-software", action="store_true")
    args = ap.parse_args(argv)
    print(json.dumps(run(args.n, args.reps, args.extra, args.allow_software), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
