"""Where one native `Graph.run` of the MLP step goes, phase by phase.

    PYTHONPATH=pylib python3 bench/execute_phases.py --runs 50 [--allow-software]

Times, as median / min ms over --runs after a warm-up: the graph dict (`Graph._graph_dict`),
`protocol.validate` in full and with the structure cached (gpulab.validate_cache: what the
native host calls; only the data is checked again), the wgpu executor's `supports`, `prepare` with the plan cache (structure
key + re-upload of the data; a parked program is reused), `run` of the one step with every
output read back (encode, submit, wait, map, one copy out), the output entries, and the whole
`Graph.run` for comparison; then the same with the plan cache off (a fresh plan, buffers from
the pool, bind groups and params every time); then cProfile's top functions of a single-step
session run (`Session.run`, loss read back), the other host-bound mode; and interleaved A/B
rounds of the multi-step submission (per step vs one), and of the whole execute with the
run's host-side switches (program.py: upload, wait, encode) and validate_cache on/off.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
from collections.abc import Callable
from typing import Any

from gpulab.models.mlp import init, step_graph
from gpulab.native.plan_cache import PlanCache
from gpulab.native.wgpu_executor import open_executor
from gpulab.protocol import validate
from gpulab.results import output_entry
from gpulab.validate_cache import validate as cached_validate


def timed(fn: Callable[[], Any], runs: int) -> str:
    fn()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return f"{statistics.median(samples):.3f} / {min(samples):.3f}"


def phases(ex: Any, runs: int, label: str) -> None:
    step = step_graph(init(0))
    outputs = step.outputs()
    graph = step.graph._graph_dict(outputs)
    checked = validate(graph)
    ids = [o.id for o in checked.outputs]

    def prepare() -> None:
        ex.prepare(checked).dispose()

    def run() -> dict:
        program = ex.prepare(checked)
        try:
            return program.run([{}], ids)
        finally:
            program.dispose()

    values = run()
    prepared = ex.prepare(checked)
    rows = [
        ("graph dict", timed(lambda: step.graph._graph_dict(outputs), runs)),
        ("validate (protocol.validate, in full)", timed(lambda: validate(graph), runs)),
        (
            "validate, structure cached (validate_cache: data only)",
            timed(lambda: cached_validate(graph), runs),
        ),
        ("supports", timed(lambda: ex.supports(checked), runs)),
        ("prepare (+ dispose)", timed(prepare, runs)),
        ("run, all 18 outputs read back", timed(lambda: prepared.run([{}], ids), runs)),
        (
            "output entries",
            timed(
                lambda: [
                    output_entry(values[o.id], checked.by_id[o.id].shape, checked.by_id[o.id].dtype)
                    for o in checked.outputs
                ],
                runs,
            ),
        ),
    ]
    prepared.dispose()
    print(f"## {label}: ms, median / min of {runs}")
    for name, cell in rows:
        print(f"| {name} | {cell} |")


def session_profile(runs: int) -> None:
    values = init(0)
    fed = step_graph(values, feed_batch=True)
    batch = {fed.x: values["x"], fed.y: values["y"]}
    s = fed.graph.prepare(feeds=[fed.x, fed.y], carry=fed.carry(), backend="wgpu", loss=fed.loss)
    print(f"session run (1 step), ms median / min: {timed(lambda: s.run(batch), runs)}")
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        s.run(batch)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(14)
    print(text.getvalue()[-4000:])
    s.dispose()


def interleaved(ex: Any, runs: int) -> None:
    """A/B in one process, alternating every run: a multi-step run submitted per step vs in
    one submission (8 steps, ms per step). (Input uploads staged in one mapped buffer vs
    queue.write_buffer were compared the same way at commit 9729dd3: docs/benchmarks.md.)"""
    values = init(0)
    fed = step_graph(values, feed_batch=True)
    batch = {fed.x: values["x"], fed.y: values["y"]}
    s = fed.graph.prepare(feeds=[fed.x, fed.y], carry=fed.carry(), backend="wgpu", loss=fed.loss)
    arms = {
        ("8 steps", "a submission per step"): ("steps_per_submit", 1),
        ("8 steps", "one submission"): ("steps_per_submit", 0),
    }
    samples: dict[tuple[str, str], list[float]] = {k: [] for k in arms}
    for _ in range(runs + 1):
        for arm, (hook, value) in arms.items():
            ex.hooks[hook] = value
            t0 = time.perf_counter()
            s.run_steps([batch] * 8)
            samples[arm].append((time.perf_counter() - t0) * 1e3 / 8)
            ex.hooks.pop(hook)
    s.dispose()
    print(f"## interleaved A/B: ms, median / min of {runs} (first round dropped)")
    for (what, arm), values_ms in samples.items():
        rest = values_ms[1:]
        print(f"| {what} | {arm} | {statistics.median(rest):.3f} / {min(rest):.3f} |")


EXECUTE_ARMS: dict[str, tuple[dict[str, Any], int]] = {
    # name: (executor hooks, validate_cache entries); program.py names the hooks
    "default": ({}, 64),
    "validate_cache off": ({}, 0),
    "wait: wgpu-py's poll thread": ({"wait": "thread"}, 64),
    "encode: wgpu-py methods": ({"encode": "wgpu-py"}, 64),
    "map READ (wgpu-py's extra submit)": ({"map_mode": "READ"}, 64),
    "wait: direct": ({"wait": "direct"}, 64),
}
SESSION_ARMS: dict[str, dict[str, Any]] = {
    "default": {},
    "map READ (wgpu-py's extra submit)": {"map_mode": "READ"},
    "pre-encode the next step": {"pre_encode": True},
    "wait: direct": {"wait": "direct"},
    "pre-encode + direct wait": {"pre_encode": True, "wait": "direct"},
}


def session_ab(ex: Any, runs: int) -> None:
    """Single-step Session.run (what `gpulab bench` times as "run (1 step)"), interleaved
    rounds of a few runs per arm; the first run of each arm's turn is not timed."""
    values = init(0)
    fed = step_graph(values, feed_batch=True)
    batch = {fed.x: values["x"], fed.y: values["y"]}
    s = fed.graph.prepare(feeds=[fed.x, fed.y], carry=fed.carry(), backend="wgpu", loss=fed.loss)
    samples: dict[str, list[float]] = {name: [] for name in SESSION_ARMS}
    base = dict(ex.hooks)
    for round_ in range(runs + 1):
        for name, hooks in SESSION_ARMS.items():
            ex.hooks.clear()
            ex.hooks.update(base, **hooks)
            s.run(batch)
            for _ in range(3):
                t0 = time.perf_counter()
                s.run(batch)
                if round_:
                    samples[name].append((time.perf_counter() - t0) * 1e3)
    ex.hooks.clear()
    ex.hooks.update(base)
    s.dispose()
    print(f"## session A/B (Session.run, 1 step, loss): ms, median / min of {3 * runs}")
    for name, hooks in SESSION_ARMS.items():
        rest = samples[name]
        print(f"| {name} | `{hooks}` | {statistics.median(rest):.3f} / {min(rest):.3f} |")


def execute_ab(ex: Any, runs: int) -> None:
    """The whole native execute (host.execute: validate, prepare from the plan cache, run with
    every output read back, output entries) in interleaved rounds, one arm after another."""
    from gpulab import host, validate_cache

    step = step_graph(init(0))
    graph = step.graph._graph_dict(step.outputs())
    samples: dict[str, list[float]] = {name: [] for name in EXECUTE_ARMS}
    base = dict(ex.hooks)
    for round_ in range(runs + 1):
        for name, (hooks, entries) in EXECUTE_ARMS.items():
            ex.hooks.clear()
            ex.hooks.update(base, **hooks)
            validate_cache.configure(entries)
            host.execute(graph, backend="wgpu")  # refills the cache after configure
            t0 = time.perf_counter()
            host.execute(graph, backend="wgpu")
            if round_:
                samples[name].append((time.perf_counter() - t0) * 1e3)
    ex.hooks.clear()
    ex.hooks.update(base)
    validate_cache.configure()
    print(f"## execute A/B (host.execute of the MLP step, all outputs): ms, median / min of {runs}")
    for name, (hooks, entries) in EXECUTE_ARMS.items():
        rest = samples[name]
        print(
            f"| {name} | `{hooks}`, validate_cache {entries} | "
            f"{statistics.median(rest):.3f} / {min(rest):.3f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--allow-software", action="store_true", default=None)
    ns = ap.parse_args()
    from gpulab import executors

    executors.configure(allow_software=ns.allow_software)
    cached = open_executor(ns.allow_software)
    print(cached.info)
    phases(cached, ns.runs, "plan cache on")
    cached.dispose()
    shared = executors.open_executor("wgpu", bool(ns.allow_software))
    interleaved(shared, ns.runs)
    execute_ab(shared, ns.runs)
    session_ab(shared, ns.runs)
    uncached = open_executor(ns.allow_software, hooks={"plan_cache": PlanCache(0, 0)})
    phases(uncached, ns.runs, "plan cache off")
    uncached.dispose()
    session_profile(ns.runs)


if __name__ == "__main__":
    main()
