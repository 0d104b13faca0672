"""GPU timestamps of the MLP step's plan on wgpu: what bounds a step.

    python bench/gpu_timestamps.py --runs 50                      # a hardware adapter
    python bench/gpu_timestamps.py --runs 5 --allow-software      # here: lavapipe (software)

The MLP step (gpulab.models.mlp: 784-256-10, Adam, batch 64) is prepared as `gpulab bench`
prepares it (feeds x, y; the parameters and Adam state carried), then its recorded dispatches
(program._recorded: what WgpuProgram.run encodes) are replayed with timestamp queries:

- per dispatch: a timestamp before the first dispatch and after each one inside the pass
  (feature "timestamp-query-inside-passes", `wgpu.backends.wgpu_native.extras.write_timestamp`);
  a dispatch's time is its timestamp minus the previous one, so it includes the barrier wgpu
  puts between dependent dispatches;
- the pass total from the pass's own begin/end timestamps (`timestamp_writes`, no timestamps
  between dispatches, so nothing inside the pass is perturbed), the host's encode time of the
  same step (create encoder -> finish, Python + wgpu-native), the `queue.submit` call, and
  submit -> done (the submission ends with a 16-byte copy into a MAP_READ buffer; done is when
  map_sync of it returns, as a run's read-back of the loss does);
- an empty chain of as many dispatches (each writes one word: the per-dispatch floor);
- all of the above again for 8 steps in one submission (a pass per step, as WgpuProgram.run
  encodes a multi-step run), with the gap between one step's pass end and the next's begin;
- `program.run` wall time for 1 and 8 steps (loss read back), for reference;
- A/B of the run's host-side switches (program.py: C-call encoding, a step split into two
  submissions, polling for the read-back in the calling thread, the next single step encoded
  while this one runs), interleaved rounds.

Ticks -> ns: wgpu-native's `wgpuQueueGetTimestampPeriod` (through wgpu-py's `lib`); on Vulkan
it is VkPhysicalDeviceLimits::timestampPeriod (NVIDIA reports 1.0: ticks are ns). The script
also checks it against the host clock: a submission of many dispatches, GPU span from the
timestamps vs host wall time from submit to done (the ratio should be a bit under 1).
Prints markdown; medians (and minimums) over --runs rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from gpulab.errors import GpuLabError
from gpulab.native.bench_matmul import wait_for_queue
from gpulab.native.wgpu_executor import open_executor

FEATURES = ("timestamp-query", "timestamp-query-inside-passes")
EMPTY = """@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x == 0u) { out[0] = out[0] + 1.0f; }
}"""

Recorded = list[tuple[Any, Any, list[int]]]  # (pipeline, bind group, workgroups) per dispatch


class Queries:
    """A timestamp query set with its resolve and read-back buffers; read() gives ns."""

    def __init__(self, device: Any, count: int, period: float) -> None:
        import wgpu

        usage = wgpu.BufferUsage
        self.device, self.count, self.period = device, count, period
        self.set = device.create_query_set(type=wgpu.QueryType.timestamp, count=count)
        self.resolve = device.create_buffer(
            size=8 * count, usage=usage.QUERY_RESOLVE | usage.COPY_SRC
        )
        self.readback = device.create_buffer(size=8 * count, usage=usage.MAP_READ | usage.COPY_DST)

    def finish(self, encoder: Any, used: int) -> None:
        """Resolve the first `used` queries and copy them out (in the step's own encoder)."""
        encoder.resolve_query_set(self.set, 0, used, self.resolve, 0)
        encoder.copy_buffer_to_buffer(self.resolve, 0, self.readback, 0, 8 * used)

    def read(self, used: int) -> np.ndarray:
        import wgpu

        self.readback.map_sync(wgpu.MapMode.READ, 0, 8 * used)
        ticks = np.frombuffer(self.readback.read_mapped(0, 8 * used), np.uint64).copy()
        self.readback.unmap()
        return (ticks - ticks[0]).astype(np.float64) * self.period  # ns from the first


def timestamp_period(device: Any) -> float:
    """ns per tick, from wgpu-native (wgpu.h: wgpuQueueGetTimestampPeriod)."""
    from wgpu.backends.wgpu_native._api import lib

    return float(lib.wgpuQueueGetTimestampPeriod(device.queue._internal))


def encode_dispatches(compute: Any, recorded: Recorded, queries: Queries | None, at: int) -> int:
    """The recorded dispatches as WgpuProgram._encode_step encodes them; with queries, a
    timestamp before the first and after each (indices from `at`). Returns the next index."""
    from wgpu.backends.wgpu_native.extras import write_timestamp

    if queries is not None:
        write_timestamp(compute, queries.set, at)
        at += 1
    current = None
    for pipeline, group, (x, y, z) in recorded:
        if pipeline is not current:
            compute.set_pipeline(pipeline)
            current = pipeline
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(x, y, z)
        if queries is not None:
            write_timestamp(compute, queries.set, at)
            at += 1
    return at


class Marker:
    """A 16-byte copy into a MAP_READ buffer at the end of a submission: done = mapped."""

    def __init__(self, device: Any) -> None:
        import wgpu

        self.src = device.create_buffer(size=16, usage=wgpu.BufferUsage.COPY_SRC)
        self.dst = device.create_buffer(
            size=16, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        )

    def encode(self, encoder: Any) -> None:
        encoder.copy_buffer_to_buffer(self.src, 0, self.dst, 0, 16)

    def wait(self) -> None:
        import wgpu

        self.dst.map_sync(wgpu.MapMode.READ, 0, 16)
        self.dst.unmap()


def per_dispatch(device: Any, recordings: list[Recorded], steps: int, runs: int) -> np.ndarray:
    """[runs * steps, dispatches] ns per dispatch (timestamp deltas), a pass per step."""
    n = len(recordings[0])
    queries = Queries(device, steps * (n + 1), timestamp_period(device))
    rows = []
    for _ in range(runs):
        encoder = device.create_command_encoder()
        at = 0
        for s in range(steps):
            compute = encoder.begin_compute_pass()
            at = encode_dispatches(compute, recordings[s % len(recordings)], queries, at)
            compute.end()
        queries.finish(encoder, at)
        device.queue.submit([encoder.finish()])
        ns = queries.read(at).reshape(steps, n + 1)
        rows.append(np.diff(ns, axis=1))
    return np.concatenate(rows)


def whole_passes(
    device: Any, recordings: list[Recorded], steps: int, runs: int, fast: bool = False
) -> dict[str, list[float]]:
    """Per round, in us: the pass of each step (its begin/end timestamps), the gap from one
    step's end to the next's begin, the host's encode time, the submit call, submit -> done.
    fast: the dispatches encoded by C calls and the marker waited for by polling in this
    thread (program.py's hooks encode="raw", wait="direct")."""
    from gpulab.native.program import _encode_raw, _map_direct

    queries = Queries(device, 2 * steps, timestamp_period(device))
    marker = Marker(device)
    raw = [[(p._internal, g._internal, *d) for p, g, d in rec] for rec in recordings]
    out: dict[str, list[float]] = {"pass": [], "gap": [], "encode": [], "submit": [], "done": []}
    for _ in range(runs):
        t0 = time.perf_counter()
        encoder = device.create_command_encoder()
        for s in range(steps):
            compute = encoder.begin_compute_pass(
                timestamp_writes={
                    "query_set": queries.set,
                    "beginning_of_pass_write_index": 2 * s,
                    "end_of_pass_write_index": 2 * s + 1,
                }
            )
            if fast:
                _encode_raw(compute, raw[s % len(raw)])
            else:
                encode_dispatches(compute, recordings[s % len(recordings)], None, 0)
            compute.end()
        queries.finish(encoder, 2 * steps)
        marker.encode(encoder)
        buffer = encoder.finish()
        t1 = time.perf_counter()
        device.queue.submit([buffer])
        t2 = time.perf_counter()
        if fast:
            _map_direct(device, marker.dst)
            marker.dst.unmap()
        else:
            marker.wait()
        t3 = time.perf_counter()
        ns = queries.read(2 * steps).reshape(steps, 2)
        out["pass"] += list((ns[:, 1] - ns[:, 0]) / 1e3)
        out["gap"] += list((ns[1:, 0] - ns[:-1, 1]) / 1e3)
        out["encode"].append((t1 - t0) * 1e6 / steps)
        out["submit"].append((t2 - t1) * 1e6)
        out["done"].append((t3 - t1) * 1e6)
    return out


def empty_chain(device: Any, count: int) -> Recorded:
    buf = device.create_buffer(size=16, usage=0x80 | 0x08)  # STORAGE | COPY_DST
    module = device.create_shader_module(code=EMPTY)
    pipe = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )
    group = device.create_bind_group(
        layout=pipe.get_bind_group_layout(0), entries=[{"binding": 0, "resource": {"buffer": buf}}]
    )
    return [(pipe, group, [1, 1, 1]) for _ in range(count)]


def period_check(device: Any, recorded: Recorded, reps: int) -> tuple[float, float]:
    """(GPU span us from the pass timestamps, host us submit -> done) of one long pass."""
    queries = Queries(device, 2, timestamp_period(device))
    marker = Marker(device)
    wait_for_queue(device)
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass(
        timestamp_writes={
            "query_set": queries.set,
            "beginning_of_pass_write_index": 0,
            "end_of_pass_write_index": 1,
        }
    )
    for _ in range(reps):
        encode_dispatches(compute, recorded, None, 0)
    compute.end()
    queries.finish(encoder, 2)
    marker.encode(encoder)
    buffer = encoder.finish()
    t0 = time.perf_counter()
    device.queue.submit([buffer])
    marker.wait()
    host = (time.perf_counter() - t0) * 1e6
    return float(queries.read(2)[1] / 1e3), host


def med_min(values: Any) -> str:
    values = list(values)
    return f"{statistics.median(values):.1f} / {min(values):.1f}"


def mlp_program(executor: Any) -> tuple[Any, Any, dict[int, Any], int]:
    """The MLP step prepared as gpulab.bench prepares it: (program, checked, batch, loss id)."""
    from gpulab.models.mlp import init, step_graph
    from gpulab.protocol import validate

    values = init(0)
    fed = step_graph(values, feed_batch=True)
    outputs = fed.outputs()
    checked = validate(fed.graph.to_dict(**outputs))
    carry = {k.id: v.id for k, v in fed.carry().items()}
    program = executor.prepare(
        checked,
        feeds=[fed.x.id, fed.y.id],
        carry=carry,
        keep=[t.id for t in outputs.values()],
    )
    batch = {fed.x.id: values["x"], fed.y.id: values["y"]}
    return program, checked, batch, fed.loss.id


def report_dispatches(program: Any, checked: Any, mlp: np.ndarray, empty: np.ndarray) -> None:
    print("| # | node op | kernel | workgroups | GPU us, median / min | empty kernel us |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, step in enumerate(program.plan["steps"]):
        op = checked.by_id[step["node"]].op
        fused = sorted(k for k in step["overrides"] if k.startswith(("EPI", "PRE", "POST")))
        op += f" (fused: {', '.join(fused)})" if fused else ""  # the planners' fusions
        kernel = step["kernel"] + ("" if step["entry"] == "main" else f":{step['entry']}")
        print(
            f"| {i} | {op} | {kernel} | {'x'.join(map(str, step['dispatch']))} | "
            f"{med_min(mlp[:, i] / 1e3)} | {med_min(empty[:, i] / 1e3)} |"
        )
    print(
        f"| | **sum of the step** | | | {med_min(mlp.sum(axis=1) / 1e3)} | "
        f"{med_min(empty.sum(axis=1) / 1e3)} |"
    )


def report_passes(label: str, columns: list[dict[str, list[float]]]) -> None:
    print(f"\n{label}: us, median / min")
    print(
        "| | MLP step | MLP step, raw encode + poll wait | empty chain | empty chain, raw + poll |"
    )
    print("| --- | --- | --- | --- | --- |")
    rows = [
        ("GPU: the pass (its begin/end timestamps), per step", "pass"),
        ("host: encode (create encoder -> finish), per step", "encode"),
        ("host: the queue.submit call, per submission", "submit"),
        ("submit -> done (marker mapped), per submission", "done"),
    ]
    if columns[0]["gap"]:
        rows.insert(1, ("GPU: gap between one step's pass end and the next's begin", "gap"))
    for name, key in rows:
        print(f"| {name} | " + " | ".join(med_min(c[key]) for c in columns) + " |")


def session_runs(program: Any, batch: dict[int, Any], loss: int, runs: int) -> None:
    print("\n`program.run`, loss read back: us per step, median / min")
    print("| steps per run | us per step |")
    print("| --- | --- |")
    for steps in (1, 8):
        program.run([batch] * steps, [loss])
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            program.run([batch] * steps, [loss])
            samples.append((time.perf_counter() - t0) / steps * 1e6)
        print(f"| {steps} | {med_min(samples)} |")


def ab_arms() -> dict[str, dict[str, Any]]:
    """The host-side switches of WgpuProgram.run (program.py ENCODE, WAIT, MAP_MODE,
    PRE_ENCODE) as executor hooks: name -> hooks ({} is the default)."""
    return {
        "default": {},
        "encode: wgpu-py methods (the default was, until call B)": {"encode": "wgpu-py"},
        "wait: wgpu-py's poll thread": {"wait": "thread"},
        "map READ (wgpu-py's extra empty submit; the default was, until 18:25)": {
            "map_mode": "READ"
        },
        "pre-encode the next step": {"pre_encode": True},
        "wait: direct (map + poll in this thread, no poll-thread hand-off)": {"wait": "direct"},
        "pre-encode + direct wait": {"pre_encode": True, "wait": "direct"},
    }


def ab_runs(
    executor: Any, program: Any, batch: dict[int, Any], loss: int, runs: int, count: int
) -> None:
    """Interleaved rounds (every arm once per round) of program.run, loss read back; the
    first `count` arms. A timed 1-step run follows an untimed one of the same arm (so
    pre_encode has the step it encoded ahead, as in a loop of single steps)."""
    arms = dict(list(ab_arms().items())[:count])
    print(
        f"\nA/B of the run's host-side switches (program.py; executor hooks), {runs} interleaved "
        "rounds, `program.run` with the loss read back: us per step, median / min"
    )
    print("| arm | hooks | 1 step | 8 steps, per step |")
    print("| --- | --- | --- | --- |")
    samples: dict[tuple[str, int], list[float]] = {(a, s): [] for a in arms for s in (1, 8)}
    base = dict(executor.hooks)
    for round_ in range(runs + 1):
        for name, hooks in arms.items():
            for steps in (8, 1):
                executor.hooks.clear()
                executor.hooks.update(base, **hooks)
                if steps == 1:  # a training loop's runs follow runs of the same kind
                    program.run([batch], [loss])
                t0 = time.perf_counter()
                program.run([batch] * steps, [loss])
                if round_:  # the first round warms every arm
                    samples[(name, steps)].append((time.perf_counter() - t0) / steps * 1e6)
    executor.hooks.clear()
    executor.hooks.update(base)
    for name, hooks in arms.items():
        cells = " | ".join(med_min(samples[(name, s)]) for s in (1, 8))
        print(f"| {name} | `{hooks}` | {cells} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--allow-software", action="store_true", default=None)
    ap.add_argument("--arms", type=int, default=99, help="how many A/B arms (default: all)")
    args = ap.parse_args(argv)
    try:
        executor = open_executor(args.allow_software, features=FEATURES)
        inside = True
    except GpuLabError as err:  # no timestamps between dispatches: the pass totals only
        print(f"(no {FEATURES[1]}: {err}; per-dispatch tables skipped)")
        executor = open_executor(args.allow_software, features=FEATURES[:1])
        inside = False
    device = executor.device
    period = timestamp_period(device)
    kind = "SOFTWARE adapter (lavapipe: CPU timings)" if executor.info["software"] else "hardware"
    print(f"## GPU timestamps of the MLP step on wgpu: {executor.info['description']} ({kind})\n")
    print(f"backend {executor.info['backend_type']}; timestamp period {period} ns per tick")
    program, checked, batch, loss = mlp_program(executor)
    program.run([batch], [loss])  # feeds in place, pipelines warm
    recordings = program._recorded
    n = len(recordings[0])
    empty = [empty_chain(device, n)]
    reps = 10 if executor.info["software"] else 200  # lavapipe: ~20 ms a step
    span, host = period_check(device, recordings[0], reps)
    print(
        f"period check: {reps} steps' dispatches in one pass, GPU span {span:.0f} us by the "
        f"timestamps, host submit -> done {host:.0f} us (ratio {span / host:.3f})"
    )
    print(f"plan: {n} dispatches per step, carries {program.carry_mode}\n")
    for steps in (1, 8):
        print(f"### {steps} step(s) per submission\n")
        if inside:
            per_dispatch(device, recordings, steps, 2)  # warm
            mlp = per_dispatch(device, recordings, steps, args.runs)
            chain = per_dispatch(device, empty, steps, args.runs)
            print(f"Per dispatch (timestamp deltas inside the pass; {mlp.shape[0]} samples):")
            report_dispatches(program, checked, mlp, chain)
        whole_passes(device, recordings, steps, 2)
        whole_passes(device, recordings, steps, 2, fast=True)
        report_passes(
            f"Whole passes, no timestamps between dispatches ({steps} step(s) per submission)",
            [
                whole_passes(device, chain, steps, args.runs, fast)
                for chain in (recordings, empty)
                for fast in (False, True)
            ],
        )
        print()
    session_runs(program, batch, loss, args.runs)
    ab_runs(executor, program, batch, loss, args.runs, args.arms)
    program.dispose()
    executor.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
