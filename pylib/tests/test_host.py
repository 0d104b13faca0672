"""gpulab.host routing with a stand-in wgpu executor: lazy cached probe, LIMIT fallback to
cpu-python with records, strict mode, forced backends never downgraded, the GPU switch, software
admission, validation before any work, and the Pyodide seam."""

from __future__ import annotations

import array
import math
import subprocess
import sys
import types

import pytest
from gpulab import GpuLabError, Graph, host
from gpulab.cpu import CpuExecutor

SEED = {
    "version": 1,
    "nodes": [
        {"id": 0, "op": "input", "shape": [3], "data": [-2, 3, 4]},
        {"id": 1, "op": "input", "shape": [3], "data": [10, 20, 30]},
        {"id": 2, "op": "mul", "a": 0, "b": 1},
        {"id": 3, "op": "relu", "a": 2},
    ],
    "outputs": [{"name": "values", "id": 3}],
}


class FakeWgpu:
    """Runs on numpy but calls itself wgpu; can refuse with LIMIT at prepare."""

    name = "wgpu"

    def __init__(self, limit: bool) -> None:
        self.limit = limit
        self.info = {
            "vendor": "fake",
            "architecture": "test",
            "description": "stand-in",
            "software": False,
        }

    def prepare(self, checked, feeds=(), carry=None, keep=()):
        if self.limit == "crash":
            raise RuntimeError("driver bug")
        if self.limit:
            raise GpuLabError("LIMIT", "buffer larger than maxStorageBufferBindingSize")
        return CpuExecutor().prepare(checked, feeds, carry, keep)


@pytest.fixture()
def fake_wgpu(monkeypatch):
    """Install a stand-in gpulab.native.wgpu_executor; returns its call log and settings."""
    state = {"calls": [], "mode": "ok"}

    def open_executor(allow_software: bool):
        state["calls"].append(allow_software)
        if state["mode"] == "unavailable":
            raise GpuLabError("UNAVAILABLE", "no hardware adapter (lavapipe refused)")
        return FakeWgpu(limit={"limit": True, "crash": "crash"}.get(state["mode"], False))

    module = types.ModuleType("gpulab.native.wgpu_executor")
    module.open_executor = open_executor
    monkeypatch.setitem(sys.modules, "gpulab.native.wgpu_executor", module)
    monkeypatch.delenv("GPULAB_GPU", raising=False)
    monkeypatch.delenv("GPULAB_ALLOW_SOFTWARE", raising=False)
    host.configure()
    yield state
    host.configure()


def test_auto_uses_the_gpu_and_probes_once(fake_wgpu):
    first = host.execute(SEED)
    second = host.execute(SEED)
    assert first["backend"] == second["backend"] == "wgpu"
    assert first["outputs"]["values"]["data"] == [0.0, 60.0, 120.0]
    assert fake_wgpu["calls"] == [False]
    assert first["stats"]["attempts"] == [{"backend": "wgpu", "ok": True, "reason": None}]
    assert first["stats"]["adapter"]["vendor"] == "fake" and first["stats"]["software"] is False


def test_limit_falls_back_to_cpu_and_says_so(fake_wgpu):
    fake_wgpu["mode"] = "limit"
    result = host.execute(SEED)
    assert result["backend"] == "cpu-python"
    assert result["outputs"]["values"]["data"] == [0.0, 60.0, 120.0]
    attempts = result["stats"]["attempts"]
    assert [(a["backend"], a["ok"]) for a in attempts] == [("wgpu", False), ("cpu-python", True)]
    assert "maxStorageBufferBindingSize" in attempts[0]["reason"]
    assert "re-evaluated on cpu-python" in result["stats"]["fallback"]
    with pytest.raises(GpuLabError) as info:
        host.execute(SEED, strict=True)
    assert info.value.code == "LIMIT"


def test_forced_wgpu_is_never_downgraded(fake_wgpu):
    fake_wgpu["mode"] = "limit"
    with pytest.raises(GpuLabError) as info:
        host.execute(SEED, backend="wgpu")
    assert info.value.code == "LIMIT"
    host.configure()
    fake_wgpu["mode"] = "unavailable"
    with pytest.raises(GpuLabError) as info:
        host.execute(SEED, backend="wgpu")
    assert info.value.code == "UNAVAILABLE" and "lavapipe" in info.value.message


def test_executor_crashes_are_backend_errors_and_drop_the_cached_probe(fake_wgpu):
    fake_wgpu["mode"] = "crash"
    with pytest.raises(GpuLabError) as info:
        host.execute(SEED)
    assert info.value.code == "BACKEND" and "driver bug" in info.value.message
    fake_wgpu["mode"] = "ok"
    assert host.execute(SEED)["backend"] == "wgpu"
    assert len(fake_wgpu["calls"]) == 2  # probed again after the failure


def test_unavailable_gpu_falls_back_with_the_reason_unless_strict(fake_wgpu):
    fake_wgpu["mode"] = "unavailable"
    result = host.execute(SEED)
    assert result["backend"] == "cpu-python" and result["stats"]["adapter"] is None
    assert result["stats"]["attempts"][0] == {
        "backend": "wgpu",
        "ok": False,
        "reason": "no hardware adapter (lavapipe refused)",
    }
    with pytest.raises(GpuLabError) as info:
        host.execute(SEED, strict=True)
    assert info.value.code == "UNAVAILABLE"


def test_gpu_switch_skips_the_probe(fake_wgpu, monkeypatch):
    monkeypatch.setenv("GPULAB_GPU", "0")
    assert host.execute(SEED)["backend"] == "cpu-python"
    monkeypatch.delenv("GPULAB_GPU")
    host.configure(gpu=False)
    assert host.execute(SEED)["backend"] == "cpu-python"
    assert host.execute(SEED, backend="cpu-python")["stats"]["attempts"][-1]["ok"]
    assert fake_wgpu["calls"] == []


def test_software_admission_reaches_the_executor(fake_wgpu, monkeypatch):
    host.execute(SEED, allow_software=True)
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    host.execute(SEED)  # cached per mode: True was already probed
    host.configure(allow_software=False)
    host.execute(SEED)
    assert fake_wgpu["calls"] == [True, False]


def test_missing_wgpu_module_is_recorded(monkeypatch):
    monkeypatch.setitem(sys.modules, "gpulab.native.wgpu_executor", None)  # ImportError
    monkeypatch.delenv("GPULAB_GPU", raising=False)
    host.configure()
    try:
        result = host.execute(SEED)
    finally:
        host.configure()
    assert result["backend"] == "cpu-python"
    assert not result["stats"]["attempts"][0]["ok"]
    assert "not available" in result["stats"]["attempts"][0]["reason"]


def test_bad_graphs_fail_before_any_work(fake_wgpu):
    bad = {**SEED, "nodes": SEED["nodes"][:3] + [{"id": 3, "op": "relu", "a": 7}]}
    with pytest.raises(GpuLabError) as info:
        host.execute(bad)
    assert info.value.code == "VALIDATION" and "node 3 (relu)" in info.value.message
    assert fake_wgpu["calls"] == []
    with pytest.raises(GpuLabError) as info:
        host.execute(SEED, backend="tpu")
    assert info.value.code == "UNAVAILABLE" and "tpu" in info.value.message


def test_session_prepare_falls_back_on_limit(fake_wgpu):
    fake_wgpu["mode"] = "limit"
    g = Graph()
    c = g.tensor([1.0])
    session = g.prepare(carry={c: c + 1}, out=c * 1)
    assert session.backend == "cpu-python"
    assert session.run_steps(2)["stats"]["fallback"]
    assert session.download(c)["data"] == [3.0]
    session.dispose()


def test_page_host_hands_buffers_to_the_bridge_and_leaves_validation_to_it(monkeypatch):
    calls = []
    bridge = types.ModuleType("gpulab.pyodide_bridge")
    bridge.execute = lambda graph: calls.append(("execute", graph)) or {"backend": "webgpu"}
    bridge.submit = lambda graph, cb, on_error: calls.append(("submit", graph)) or cb("ok")
    monkeypatch.setitem(sys.modules, "gpulab.pyodide_bridge", bridge)
    monkeypatch.setattr("gpulab.pyodide_bridge", bridge, raising=False)
    monkeypatch.setattr(host, "HOST", host.PageHost())
    g = Graph()
    t = g.tensor([1.0, float("nan")]).relu()
    assert g.run(out=t) == {"backend": "webgpu"}
    got = []
    g.submit(got.append, out=t)
    assert got == ["ok"]
    assert [c[0] for c in calls] == ["execute", "submit"]
    data = calls[0][1]["nodes"][0]["data"]
    assert isinstance(data, array.array) and data.typecode == "f"  # a buffer: one typed array
    assert data[0] == 1.0 and math.isnan(data[1])
    host.submit({"version": 9}, got.append)  # not validated in Python: the JS runtime does it
    assert calls[-1] == ("submit", {"version": 9})
    bridge.prepare = lambda graph, **options: calls.append(("prepare", graph, options)) or "s"
    assert host.prepare({"version": 9}, feeds=[1], backend="wgpu") == "s"
    assert calls[-1] == (
        "prepare",
        {"version": 9},
        {"feeds": [1], "carry": {}, "resident": [], "outputs": None, "input_names": {}},
    )


def test_the_host_is_chosen_once_at_import():
    code = (
        "import sys; sys.platform = 'emscripten'\n"
        "from gpulab import host; print(type(host.HOST).__name__)\n"
        "sys.platform = 'linux'; print(type(host.HOST).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["PageHost", "PageHost"]
    assert type(host.HOST).__name__ == "NativeHost"
