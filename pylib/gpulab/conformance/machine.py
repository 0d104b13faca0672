"""The machine summary at the top of every report: what ran where, so two reports compare.

Date (UTC), the command line, the OS, Python, gpulab, node and wgpu (wgpu-py and wgpu-native)
versions, each browser lane's browser version and user agent, and each lane's adapter: vendor,
architecture, description, the WebGPU fallback flag (where the API has one: wgpu-native does not
report it) and whether it is a software adapter.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence

from .executors import node_command
from .layout import SUITE_DIR, JsRuntime

CPU_BACKENDS = ("cpu", "wasm", "cpu-python")


def summary(reports: Sequence, command: Sequence[str], runtime: JsRuntime | None = None) -> dict:
    """The machine summary of a run (reports: the lanes' runner.Report; runtime: the JS
    runtime the node and browser lanes ran)."""
    return {
        "suite_dir": str(SUITE_DIR),
        "js_runtime": str(runtime.src) if runtime else None,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": shlex.join(command),
        "os": platform.platform(),
        "cpu": platform.machine(),
        "python": platform.python_version(),
        "gpulab": _version("gpulab"),
        "node": _node_version(),
        "wgpu": _wgpu_versions(),
        "browsers": [b for r in reports if (b := _browser(r))],
        "adapters": [_adapter(r) for r in reports],
    }


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _node_version() -> str | None:
    try:
        done = subprocess.run(
            [node_command(), "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def _wgpu_versions() -> dict | None:
    if "wgpu" not in sys.modules and _version("wgpu") is None:
        return None
    try:
        import wgpu
        from wgpu.backends import wgpu_native
    except Exception as exc:  # noqa: BLE001 - the summary says why it has no version
        return {"error": f"{type(exc).__name__}: {exc}"}
    native = getattr(wgpu_native, "lib_version_info", None)
    return {
        "wgpu_py": wgpu.__version__,
        "wgpu_native": ".".join(map(str, native)) if native else None,
    }


def _browser(report) -> dict | None:
    machine = report.lane.extra.get("machine")
    if not isinstance(machine, Mapping) or not machine:
        return None
    return {
        "executor": report.lane.executor,
        "browser": machine.get("browser"),
        "version": machine.get("version"),
        "user_agent": machine.get("userAgent"),
    }


def _adapter(report) -> dict:
    """One lane's adapter as the summary lists it."""
    lane = report.lane
    base = {"executor": lane.executor, "backend": lane.backend, "available": lane.available}
    if not lane.available:
        return {**base, "reason": lane.reason}
    if lane.backend in CPU_BACKENDS:
        return {
            **base,
            "kind": "CPU (no GPU adapter)",
            "description": lane.adapter,
            "software": None,
            "fallback": None,
        }
    info = _adapter_facts(lane.extra)
    machine = lane.extra.get("machine") or {}
    webgpu = machine.get("webgpu") if lane.backend == "webgpu" else None
    fallback = webgpu.get("fallback") if isinstance(webgpu, Mapping) else None
    return {
        **base,
        "vendor": info.get("vendor"),
        "architecture": info.get("architecture"),
        "description": info.get("description") or lane.adapter,
        "fallback": fallback,
        "software": lane.software,
        "kind": "software adapter"
        if lane.software
        else ("hardware adapter" if lane.software is False else "unknown"),
        **_webgl2(machine if lane.backend == "webgl2" else {}),
    }


def _adapter_facts(extra: Mapping) -> Mapping:
    """Vendor, architecture, description: the JS runtime's info or wgpu's stats.adapter."""
    info = extra.get("info")
    if isinstance(info, Mapping) and info:
        return info
    stats = extra.get("stats") or {}
    adapter = stats.get("adapter") if isinstance(stats, Mapping) else None
    return adapter if isinstance(adapter, Mapping) else {}


def _webgl2(machine: Mapping) -> dict:
    gl = machine.get("webgl2")
    if not isinstance(gl, Mapping):
        return {}
    return {"webgl2_renderer": gl.get("renderer"), "webgl2_vendor": gl.get("vendor")}


def to_markdown(machine: Mapping) -> list[str]:
    """The summary as the report's first lines."""
    wgpu = machine.get("wgpu") or {}
    lines = [
        f"- date: {machine['date']}",
        f"- command: `{machine['command']}`",
        (
            f"- OS: {machine['os']} ({machine['cpu']}); Python {machine['python']}; "
            f"gpulab {machine.get('gpulab') or '?'}; node {machine.get('node') or 'not found'}"
        ),
        f"- wgpu-py {wgpu.get('wgpu_py') or '-'}, wgpu-native {wgpu.get('wgpu_native') or '-'}",
        f"- suite {machine.get('suite_dir')}; JS runtime {machine.get('js_runtime') or '-'}",
    ]
    for b in machine.get("browsers", []):
        lines.append(
            f"- browser ({b['executor']}): {b.get('browser')} {b.get('version')}; "
            f"{b.get('user_agent')}"
        )
    for a in machine.get("adapters", []):
        lines.append(f"- adapter ({a['executor']}): {_adapter_line(a)}")
    return lines


def _adapter_line(a: Mapping) -> str:
    if not a.get("available"):
        return "UNAVAILABLE: " + str(a.get("reason")).removeprefix("UNAVAILABLE: ")
    if a.get("kind") == "CPU (no GPU adapter)":
        return f"CPU (no GPU adapter): {a.get('description')}"
    fallback = {True: "yes", False: "no", None: "not reported"}[a.get("fallback")]
    words = [
        f"vendor {a.get('vendor') or '-'}",
        f"architecture {a.get('architecture') or '-'}",
        f"description {a.get('description') or '-'}",
        f"fallback {fallback}",
        str(a.get("kind")),
    ]
    if a.get("webgl2_renderer"):
        words.append(f"WebGL2 renderer {a['webgl2_renderer']}")
    return "; ".join(words)
