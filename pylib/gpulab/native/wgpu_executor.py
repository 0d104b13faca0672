"""The native GPU executor: the WGSL kernels of kernels/wgsl run through wgpu-py.

`open_executor(allow_software)` probes the adapter (policy in adapter.py) and opens a device;
host.py calls it for the first graph, never at import. `WgpuExecutor.prepare(checked, feeds,
carry, keep)` plans the graph (planner.py, the twin of the browser's planner.mjs) and returns a
`WgpuProgram` (program.py); plans and one-shot programs are cached by graph structure
(plan_cache.py), so a repeated execute of the same shapes only uploads data. Pipelines are created once per (kernel, overrides) and cached;
buffers come from a pool keyed by size and go back to it when a program is disposed; a
program clears the value buffers that come back from it before its first step reads them.
Everything wgpu raises after validation (WGSL errors, validation errors, out of memory, a lost
device) becomes GpuLabError("BACKEND", message).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import resources
from typing import Any

from .. import support
from ..errors import GpuLabError
from ..protocol import CheckedGraph
from . import planner
from .adapter import choose_adapter
from .plan_cache import Lease, PlanCache, structure_key
from .planner import (
    DEFAULT_LIMITS,
    MATMUL_MIN_WORKGROUPS,
    MATMUL_MIN_WORKGROUPS_SOFTWARE,
    plan_graph,
)
from .program import STEPS_PER_SUBMIT

NAME = "wgpu"

# The device limits a plan depends on: planner key -> wgpu-py (WebGPU) limit name.
PLAN_LIMITS = {
    "maxComputeWorkgroupStorageSize": "max-compute-workgroup-storage-size",
    "maxStorageBufferBindingSize": "max-storage-buffer-binding-size",
    "maxComputeWorkgroupsPerDimension": "max-compute-workgroups-per-dimension",
    "maxStorageBuffersPerShaderStage": "max-storage-buffers-per-shader-stage",
}
POOL_ALIGN = 256  # pooled buffer sizes are multiples of this, so similar sizes share buffers
POOL_MAX_BYTES = 512 * 1024 * 1024  # idle pooled memory kept for reuse; beyond it, destroyed


def open_executor(
    allow_software: bool | None = None,
    limits: Mapping[str, int] | None = None,
    hooks: Mapping[str, Callable[..., Any]] | None = None,
    features: Iterable[str] = (),
) -> WgpuExecutor:
    """Probe the adapter and open a device. Raises GpuLabError(UNAVAILABLE, reason) when no
    adapter may be used. `limits` caps planner limits (tests use it to force the 64x64 matmul
    on a device with 32 KiB of workgroup storage); `hooks["on_submit"](count)` is called after
    every queue submission (tests count them); `hooks["rules"]` replaces the planner rules that
    `supports` reads (tests take an op away); `features` are device features to require
    (bench/gpu_timestamps.py asks for "timestamp-query")."""
    adapter, info = choose_adapter(allow_software)
    try:
        device, device_limits = _open_device(adapter, tuple(features))
    except Exception as err:
        raise GpuLabError(
            "UNAVAILABLE", f"could not open a device on {info['description']}: {err}"
        ) from err
    plan_limits = {k: int(device_limits.get(v, DEFAULT_LIMITS[k])) for k, v in PLAN_LIMITS.items()}
    # a software adapter is a CPU, busy with any workgroup count: big matmul tiles (docs/plan.md)
    plan_limits["minMatmulWorkgroups"] = (
        MATMUL_MIN_WORKGROUPS_SOFTWARE if info["software"] else MATMUL_MIN_WORKGROUPS
    )
    for key, cap in (limits or {}).items():
        if key not in plan_limits:
            raise GpuLabError(
                "VALIDATION", f"unknown plan limit {key!r}; known: {sorted(plan_limits)}"
            )
        plan_limits[key] = min(plan_limits[key], int(cap))
    return WgpuExecutor(device, info, plan_limits, dict(hooks or {}))


def _open_device(adapter: Any, features: tuple[str, ...] = ()) -> tuple[Any, dict[str, int]]:
    """A device with the adapter's full workgroup storage, buffer sizes and storage buffers
    per stage (the plan uses them); other limits stay at WebGPU's defaults."""
    wanted = (
        "max-compute-workgroup-storage-size",
        "max-storage-buffer-binding-size",
        "max-buffer-size",
        "max-storage-buffers-per-shader-stage",  # multi-tensor Adam (planner_multi.py)
    )
    required = {k: adapter.limits[k] for k in wanted if k in adapter.limits}
    device = adapter.request_device_sync(required_limits=required, required_features=features)
    return device, dict(device.limits)


class WgpuExecutor:
    """One wgpu device with its shader/pipeline caches and buffer pool."""

    name = NAME

    def __init__(
        self,
        device: Any,
        info: dict[str, Any],
        limits: dict[str, int],
        hooks: dict[str, Callable[..., Any]],
    ) -> None:
        self.device = device
        self.info = info
        self.limits = limits
        self.hooks = hooks
        self.counters = {
            "submits": 0,
            "readbacks": 0,
            "pipelines": 0,
            "shader_modules": 0,
            "buffers_created": 0,
        }
        self._modules: dict[str, Any] = {}
        self._pipelines: dict[tuple, Any] = {}
        self._pool: dict[tuple[str, int], list[Any]] = {}
        self._pooled_bytes = 0
        self._lost: str | None = None
        self._disposed = False
        # plans by graph structure, and parked one-shot programs (plan_cache.py); a test
        # passes hooks["plan_cache"] = PlanCache(0, 0) to run without it
        self.plan_cache: PlanCache = hooks.get("plan_cache") or PlanCache()
        # steps per queue submission in multi-step runs (program.STEPS_PER_SUBMIT; 0 = all)
        self.steps_per_submit = 0 if info.get("software") else STEPS_PER_SUBMIT

    # -- the executor interface --------------------------------------------------------------

    def supports(self, checked: CheckedGraph) -> support.Support:
        """Before any device work: every node needs a planner rule (planner.RULES) taking its
        dtypes (planner.RULE_DTYPES, float32 where a rule declares none) and its ranks
        (planner.RULE_RANKS, 4 where a rule declares none)."""
        return support.check_kernels(
            checked,
            self.rules,
            getattr(planner, "RULE_DTYPES", None),
            ranks=getattr(planner, "RULE_RANKS", None),
        )

    @property
    def rules(self) -> Mapping[str, Any]:
        """The planner rules this executor plans with (tests narrow them)."""
        return self.hooks.get("rules") or planner.RULES

    def prepare(
        self,
        checked: CheckedGraph,
        feeds: Iterable[int] = (),
        carry: Mapping[int, int] | None = None,
        keep: Iterable[int] = (),
    ) -> Any:
        """Plan, allocate, upload and record a checked graph; see program.WgpuProgram.
        UNSUPPORTED (see supports) and LIMIT come before any device work: the host then
        re-evaluates the graph on cpu-python. Plans are cached by structure; a one-shot
        program (no feeds, carries, kept values) comes as a plan_cache.Lease whose dispose
        parks it, and a parked program of the same structure is reused with new data."""
        from .program import WgpuProgram

        self.check_usable()
        self.supports(checked).refuse(NAME)
        feeds, carry, keep = list(feeds), dict(carry or {}), list(keep)
        cache = self.plan_cache
        if not cache.enabled:
            return WgpuProgram(self, checked, plan_graph(checked, self.limits), feeds, carry, keep)
        # what the plan depends on besides the graph: the rules and matmul choice tests swap
        key = structure_key(checked, id(self.rules), id(planner.matmul_kernel))
        one_shot = not feeds and not carry and not keep  # what execute prepares
        if one_shot:
            parked = cache.take(key)
            if parked is not None:
                parked.refresh(checked)
                return Lease(parked, key, cache)
        plan = cache.plan(key, lambda: plan_graph(checked, self.limits))
        program = WgpuProgram(self, checked, plan, feeds, carry, keep)
        return Lease(program, key, cache) if one_shot else program

    def dispose(self) -> None:
        """Release pooled buffers and the device. Idempotent."""
        if self._disposed:
            return
        self.plan_cache.clear()  # parked programs' buffers go to the pool, destroyed below
        self._disposed = True
        for buffers in self._pool.values():
            for buf in buffers:
                quietly(buf.destroy)
        self._pool.clear()
        self._pipelines.clear()
        self._modules.clear()
        quietly(self.device.destroy)

    # -- shared by programs -------------------------------------------------------------------

    def check_usable(self) -> None:
        if self._disposed:
            raise GpuLabError("DISPOSED", "this wgpu executor was disposed")
        if self._lost is not None:
            raise GpuLabError("BACKEND", f"the wgpu device was lost: {self._lost}")

    @contextlib.contextmanager
    def guard(self, context: str) -> Iterator[None]:
        """Turn anything wgpu raises into GpuLabError(BACKEND) naming what was being done."""
        self.check_usable()
        try:
            yield
        except GpuLabError:
            raise
        except Exception as err:
            message = f"wgpu failed during {context}: {type(err).__name__}: {err}"
            if "device is lost" in str(err).lower():
                self._lost = message  # later calls fail fast instead of touching the device
            raise GpuLabError("BACKEND", message) from err

    def pipeline(self, kernel: str, overrides: Mapping[str, int], entry: str = "main") -> Any:
        """The compute pipeline for (kernel, entry point, overrides), created once."""
        key = (kernel, entry, tuple(sorted(overrides.items())))
        found = self._pipelines.get(key)
        if found is None:
            found = self.device.create_compute_pipeline(
                layout="auto",
                compute={
                    "module": self._module(kernel),
                    "entry_point": entry,
                    "constants": {k: float(v) for k, v in overrides.items()},
                },
            )
            self._pipelines[key] = found
            self.counters["pipelines"] += 1
        return found

    def _module(self, kernel: str) -> Any:
        module = self._modules.get(kernel)
        if module is None:
            module = self.device.create_shader_module(code=kernel_source(kernel), label=kernel)
            self._modules[kernel] = module
            self.counters["shader_modules"] += 1
        return module

    def acquire(self, nbytes: int, kind: str = "storage") -> Any:
        """A buffer of at least nbytes from the pool. kind: "storage" (STORAGE | COPY_SRC |
        COPY_DST: values), "uniform" (params), "staging" (feeds) or "readback" (MAP_READ)."""
        size = max(POOL_ALIGN, -(-nbytes // POOL_ALIGN) * POOL_ALIGN)
        free = self._pool.get((kind, size))
        if free:
            self._pooled_bytes -= size
            return free.pop()
        self.counters["buffers_created"] += 1
        return self.device.create_buffer(size=size, usage=_usage(kind))

    def acquire_reused(self, nbytes: int) -> tuple[Any, bool]:
        """A storage buffer (acquire) and whether it came back from the pool: then it still
        holds its last program's values, which the program clears before reading it (WebGPU's
        rule that every buffer a program can read starts zeroed; wgpu zeroes new ones)."""
        created = self.counters["buffers_created"]
        buf = self.acquire(nbytes)
        return buf, self.counters["buffers_created"] == created

    def release(self, buf: Any, kind: str = "storage") -> None:
        """Give a buffer back to the pool (destroyed when the pool is full)."""
        if self._disposed or self._lost is not None:
            return
        if self._pooled_bytes + buf.size > POOL_MAX_BYTES:
            quietly(buf.destroy)
            return
        self._pool.setdefault((kind, buf.size), []).append(buf)
        self._pooled_bytes += buf.size

    def submit(self, command_buffers: list[Any]) -> None:
        self.device.queue.submit(command_buffers)
        self.counters["submits"] += 1
        on_submit = self.hooks.get("on_submit")
        if on_submit is not None:
            on_submit(self.counters["submits"])

    @property
    def lost(self) -> str | None:
        """Why the device is gone (lost or past the deadline), or None."""
        return self._lost

    def expire(self, reason: str) -> None:
        """A submission passed the deadline (deadline.py): destroy the device, refuse later
        calls with `reason` (the host drops a BACKEND-failed executor and opens a new one)."""
        self._lost = reason
        quietly(self.device.destroy)

    def lose_device(self, reason: str = "destroyed by a test hook") -> None:
        """Test hook: destroy the device; every later call raises BACKEND."""
        quietly(self.device.destroy)
        self._lost = reason


def _usage(kind: str) -> int:
    import wgpu

    usage = wgpu.BufferUsage
    return {
        "storage": usage.STORAGE | usage.COPY_SRC | usage.COPY_DST,
        "uniform": usage.UNIFORM | usage.COPY_DST,
        "staging": usage.COPY_SRC | usage.COPY_DST,
        "readback": usage.MAP_READ | usage.COPY_DST,
    }[kind]


def kernel_source(kernel: str) -> str:
    """A WGSL file of the package: kernels/wgsl/<kernel>.wgsl (a link here, a copy in the wheel)."""
    path = resources.files("gpulab").joinpath("kernels", "wgsl", f"{kernel}.wgsl")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise GpuLabError(
            "BACKEND",
            f"no WGSL kernel {kernel!r} in gpulab/kernels/wgsl (generated kernels: run `make gen`)",
        ) from err


def quietly(fn: Callable[[], Any]) -> None:
    """Cleanup that must not mask the error being reported (or fail dispose)."""
    with contextlib.suppress(Exception):
        fn()
