"""The native executors: a registry by name and the fallback policy (twin of backends/index.mjs).

`EXECUTORS` maps a name to an opener: `opener(allow_software) -> executor`, raising
GpuLabError(UNAVAILABLE) with the reason when it cannot open. An executor has `name`, `info`,
`supports(checked) -> support.Support` (optional: absent means every op) and
`prepare(checked, feeds, carry, keep) -> program`.

The policy, in one place:
- `backend="cpu-python"` or `"wgpu"` runs there or fails (a forced backend is never downgraded);
- `auto` (or None) tries `AUTO_ORDER` (wgpu, then cpu-python) unless the GPU is switched off
  (`configure(gpu=False)`, `--no-gpu`, `GPULAB_GPU=0`). wgpu is passed over, with the reason in
  `stats["attempts"]` and `stats["fallback"]`, when it cannot open, when `supports(checked)`
  says UNSUPPORTED (asked before any device work) or when it refuses the graph with LIMIT;
- `strict=True` turns any such passing-over into the error itself.
The wgpu probe is lazy (the first graph opens the device) and cached per software mode; a
BACKEND failure on wgpu drops the cache so the next graph probes afresh.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import GpuLabError
from .protocol import CheckedGraph
from .results import Attempts

AUTO = "auto"
CPU = "cpu-python"
WGPU = "wgpu"
AUTO_ORDER = (WGPU, CPU)
FALLBACK_CODES = ("UNSUPPORTED", "LIMIT")  # refusals that let `auto` try the next executor


def open_cpu(allow_software: bool = False) -> Any:
    from .cpu import CpuExecutor

    return CpuExecutor()


def open_wgpu(allow_software: bool = False) -> Any:
    """The wgpu executor; every way it cannot open becomes UNAVAILABLE with the reason."""
    try:
        from .native.wgpu_executor import open_executor
    except ImportError as err:
        raise GpuLabError("UNAVAILABLE", f"the wgpu executor is not available ({err})") from err
    try:
        return open_executor(allow_software)
    except GpuLabError as err:
        if err.code == "UNAVAILABLE":
            raise
        raise GpuLabError("UNAVAILABLE", err.message) from err
    except Exception as err:  # a broken driver must not take the host down
        raise GpuLabError("UNAVAILABLE", f"opening the wgpu executor failed: {err!r}") from err


EXECUTORS: dict[str, Callable[[bool], Any]] = {WGPU: open_wgpu, CPU: open_cpu}
CACHED = {WGPU}  # executors opened once per software mode (a device); the others are cheap


@dataclass
class Config:
    """Process-wide choices (the CLI sets them); None means: read the environment."""

    gpu: bool | None = None
    allow_software: bool | None = None
    opened: dict[tuple[str, bool], Any] = field(default_factory=dict)  # -> executor or error


config = Config()


def configure(gpu: bool | None = None, allow_software: bool | None = None) -> None:
    """`gpu=False` is `--no-gpu`; `allow_software=True` admits software adapters. Forgets any
    cached adapter probe."""
    config.gpu = gpu
    config.allow_software = allow_software
    config.opened.clear()


def gpu_enabled() -> bool:
    if config.gpu is not None:
        return config.gpu
    return os.environ.get("GPULAB_GPU", "1").strip().lower() not in ("0", "false", "no", "off")


def software_allowed(explicit: bool | None = None) -> bool:
    if explicit is not None:
        return explicit
    if config.allow_software is not None:
        return config.allow_software
    return os.environ.get("GPULAB_ALLOW_SOFTWARE", "0").strip().lower() in ("1", "true", "yes")


def open_executor(name: str, allow_software: bool) -> Any:
    """Open (or reuse) one executor by name; raises UNAVAILABLE with the reason."""
    opener = EXECUTORS.get(name)
    if opener is None:
        known = [AUTO, *EXECUTORS]
        raise GpuLabError("UNAVAILABLE", f"unknown backend {name!r}; known: {known}")
    if name not in CACHED:
        return opener(allow_software)
    key = (name, allow_software)
    if getattr(config.opened.get(key), "lost", None):  # lost after it ran (a session's run
        del config.opened[key]  # past the deadline): the next graph opens a new device
    if key not in config.opened:
        try:
            config.opened[key] = opener(allow_software)
        except GpuLabError as err:
            # kept without its traceback: its frames would hold the first caller's locals
            # (gpulab.torch's live tensors) for the life of the process
            config.opened[key] = GpuLabError(err.code, err.message)
    found = config.opened[key]
    if isinstance(found, GpuLabError):
        raise GpuLabError(found.code, found.message)
    return found


def candidates(backend: str | None) -> list[str]:
    """Executor names to try, in order."""
    name = AUTO if backend is None else backend
    if name != AUTO:
        return [name]
    return list(AUTO_ORDER) if gpu_enabled() else [CPU]


def supports(executor: Any, checked: CheckedGraph) -> None:
    """Raise UNSUPPORTED when the executor says it cannot run the graph (no device work)."""
    answer = getattr(executor, "supports", None)
    if answer is not None:
        answer(checked).refuse(executor.name)


def run_with_fallback(
    backend: str | None,
    checked: CheckedGraph,
    allow_software: bool | None,
    strict: bool,
    action: Callable[[Any], Any],
) -> tuple[Any, Any, Attempts, str | None]:
    """action(executor) on the first candidate that opens, supports the graph and does not
    refuse it with LIMIT. Returns (executor, value, attempts, fallback reason or None)."""
    names = candidates(backend)
    attempts = Attempts()
    software = software_allowed(allow_software)
    refused: list[str] = []
    for i, name in enumerate(names):
        last = i == len(names) - 1
        try:
            executor = open_executor(name, software)
            supports(executor, checked)
            value = _as_gpulab_errors(name, action, executor)
        except GpuLabError as err:
            attempts.add(name, False, err.message)
            if err.code == "BACKEND" and name in CACHED:
                config.opened.clear()  # a lost device: the next graph probes afresh
            if last or strict or not _may_pass_over(err):
                refusal = _refusal(err, backend, strict, attempts)
                if refusal is err:
                    raise
                raise refusal from err
            if err.code in FALLBACK_CODES:  # the graph was refused: say so beside attempts
                refused.append(f"{name}: {err.code} {err.message}")
            continue
        attempts.add(name, True)
        fallback = f"{'; '.join(refused)}; re-evaluated on {name}" if refused else None
        return executor, value, attempts, fallback
    raise AssertionError("unreachable: the last candidate either returns or raises")


def _may_pass_over(err: GpuLabError) -> bool:
    return err.code in FALLBACK_CODES or err.code == "UNAVAILABLE"


def _refusal(
    err: GpuLabError, backend: str | None, strict: bool, attempts: Attempts | None = None
) -> GpuLabError:
    """The error the caller sees: a forced backend names itself; strict says so; auto's
    UNSUPPORTED on its last candidate says why the earlier ones were passed over (a student's
    wgsl graph: cpu-python refuses it, and the reason wgpu did not run it is the useful part)."""
    passed = [a for a in (attempts.items if attempts else [])[:-1] if not a.get("ok")]
    if err.code == "UNSUPPORTED" and backend in (None, AUTO) and passed:
        why = "; ".join(f"{a['backend']}: {a.get('reason', '')}" for a in passed)
        return GpuLabError("UNSUPPORTED", f"{err.message}; auto passed over {why}", err.node)
    if err.code == "UNAVAILABLE" and backend in CACHED:  # (cpu-python names itself)
        return GpuLabError("UNAVAILABLE", f"backend {backend!r} was requested: {err.message}")
    if err.code == "UNAVAILABLE" and strict:
        return GpuLabError("UNAVAILABLE", f"strict: no GPU ({err.message})")
    return err


def _as_gpulab_errors(name: str, action: Callable[[Any], Any], executor: Any) -> Any:
    """Every executor failure reaches the caller as a GpuLabError (BACKEND when untyped)."""
    try:
        return action(executor)
    except GpuLabError:
        raise
    except Exception as err:  # wrapped, with its cause chained
        raise GpuLabError("BACKEND", f"{name} failed: {type(err).__name__}: {err}") from err
