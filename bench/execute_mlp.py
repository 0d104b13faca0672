"""Time `Graph.run` of the 784-256-10 MLP Adam step (batch 64) on one native backend.

    PYTHONPATH=pylib .venv/bin/python bench/execute_mlp.py --runs 20            # cpu-python
    PYTHONPATH=pylib .venv/bin/python bench/execute_mlp.py --profile 20         # + cProfile

One sample is one `g.run(**outputs)` with all 18 outputs read back (what `gpulab bench` calls
"execute"), after one warm-up run. Prints the median and minimum over `--runs`, the host's own
split (validate_ms, run_ms: medians), and with `--profile N` the 15 functions with the most
own time over N runs: per-element Python loops show up there as list comprehensions,
`_json_float`, `to_float32_array`, `tolist`, ....
"""

from __future__ import annotations

import argparse
import cProfile
import io
import platform
import pstats
import statistics
import time

from gpulab.models.mlp import init, step_graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--backend", default="cpu-python")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="profile N more runs with cProfile and print the top functions",
    )
    ns = parser.parse_args()
    step = step_graph(init(0))
    outputs = step.outputs()

    def once() -> dict:
        return step.graph.run(backend=ns.backend, **outputs)

    once()  # warm-up
    samples, validate, run = [], [], []
    for _ in range(ns.runs):
        t0 = time.perf_counter()
        result = once()
        samples.append((time.perf_counter() - t0) * 1e3)
        validate.append(result["stats"].get("validate_ms", float("nan")))
        run.append(result["stats"].get("run_ms", float("nan")))
    print(
        f"{platform.node()} {platform.processor() or platform.machine()} python "
        f"{platform.python_version()} backend={result['backend']}"
    )
    print(
        f"Graph.run MLP step: median {statistics.median(samples):.2f} ms, min "
        f"{min(samples):.2f} ms over {ns.runs} runs (validate_ms median "
        f"{statistics.median(validate):.2f}, run_ms median {statistics.median(run):.2f})"
    )
    if ns.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(ns.profile):
            once()
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
        print(text.getvalue())


if __name__ == "__main__":
    main()
