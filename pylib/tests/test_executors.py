"""The native executor registry and its fallback policy: `supports(checked)` is asked before
any device work, an unsupported graph is re-evaluated on cpu-python with the attempt and reason
in stats, a forced or strict run refuses with UNSUPPORTED, and cpu-python itself refuses an op
it has no kernel for with UNSUPPORTED (not a wrapped KeyError)."""

from __future__ import annotations

import sys
import types

import pytest
from gpulab import GpuLabError, executors, host, protocol
from gpulab.cpu import CpuExecutor
from gpulab.cpu import kernels as cpu_kernels
from gpulab.native import planner
from gpulab.native.wgpu_executor import WgpuExecutor

EXP = {
    "version": 2,
    "nodes": [
        {"id": 0, "op": "input", "shape": [2], "data": [0.0, 1.0]},
        {"id": 1, "op": "relu", "a": 0},
        {"id": 2, "op": "exp", "a": 1},
    ],
    "outputs": [{"name": "y", "id": 2}],
}


def test_the_registry_mirrors_the_js_one():
    assert set(executors.EXECUTORS) == {"wgpu", "cpu-python"}
    assert executors.AUTO_ORDER == ("wgpu", "cpu-python")
    assert executors.FALLBACK_CODES == ("UNSUPPORTED", "LIMIT")


class NoExpGpu:
    """A stand-in wgpu executor whose planner rules lack `exp` (the real supports, a narrowed
    rule table, a device that must never be touched)."""

    name = "wgpu"

    def __init__(self) -> None:
        self.info = {
            "vendor": "fake",
            "architecture": "test",
            "description": "stand-in",
            "software": False,
        }
        rules = {k: v for k, v in planner.RULES.items() if k != "exp"}
        self.real = WgpuExecutor(None, self.info, {}, {"rules": rules})
        self.prepared = 0

    def supports(self, checked):
        return self.real.supports(checked)

    def prepare(self, *args, **kwargs):
        self.prepared += 1
        raise AssertionError("device work on an unsupported graph")


@pytest.fixture()
def no_exp_gpu(monkeypatch):
    fake = NoExpGpu()
    module = types.ModuleType("gpulab.native.wgpu_executor")
    module.open_executor = lambda allow_software: fake
    monkeypatch.setitem(sys.modules, "gpulab.native.wgpu_executor", module)
    monkeypatch.delenv("GPULAB_GPU", raising=False)
    host.configure()
    yield fake
    host.configure()


def test_an_unsupported_graph_is_re_evaluated_on_cpu_python(no_exp_gpu):
    result = host.execute(EXP)
    assert result["backend"] == "cpu-python"
    assert result["outputs"]["y"]["data"] == pytest.approx([1.0, 2.7182817])
    first, second = result["stats"]["attempts"]
    assert first == {
        "backend": "wgpu",
        "ok": False,
        "reason": "wgpu has no kernel for exp (node 2)",
    }
    assert second["backend"] == "cpu-python" and second["ok"]
    assert result["stats"]["fallback"] == (
        "wgpu: UNSUPPORTED wgpu has no kernel for exp (node 2); re-evaluated on cpu-python"
    )
    session = host.prepare(EXP)  # sessions take the same road
    assert session.backend == "cpu-python" and "UNSUPPORTED" in session.run()["stats"]["fallback"]
    session.dispose()
    assert no_exp_gpu.prepared == 0, "supports is asked before any device work"


def test_forced_or_strict_runs_refuse_with_unsupported(no_exp_gpu):
    for options in ({"backend": "wgpu"}, {"strict": True}):
        with pytest.raises(GpuLabError) as info:
            host.execute(EXP, **options)
        assert info.value.code == "UNSUPPORTED" and info.value.node == 2
        assert info.value.message == "wgpu has no kernel for exp (node 2)"
    assert no_exp_gpu.prepared == 0


def test_wgpu_supports_reads_the_planner_rules_and_dtypes(monkeypatch):
    checked = protocol.validate(EXP)
    gpu = WgpuExecutor(None, {}, {}, {})
    assert gpu.supports(checked).ok
    monkeypatch.delitem(planner.RULES, "relu")
    answer = gpu.supports(checked)
    assert not answer.ok and answer.missing == [
        {"id": 1, "op": "relu", "dtype": "float32", "reason": "has no kernel for relu"}
    ]
    monkeypatch.undo()
    checked.by_id[0].dtype = "int32"  # an int32 input (uploaded as words) into relu (float32)
    missing = gpu.supports(checked).missing
    assert [(m["id"], m["reason"]) for m in missing] == [(1, "has no kernel for relu at int32")]
    monkeypatch.setattr(
        planner,
        "RULE_DTYPES",
        {"input": ("float32", "int32"), "relu": ("float32", "int32")},
        raising=False,
    )
    assert gpu.supports(checked).ok


def test_cpu_python_refuses_an_op_without_a_kernel(monkeypatch):
    monkeypatch.delitem(cpu_kernels.KERNELS, "exp")
    with pytest.raises(GpuLabError) as info:
        CpuExecutor().prepare(protocol.validate(EXP))
    assert info.value.code == "UNSUPPORTED" and info.value.node == 2
    assert info.value.message == "cpu-python has no kernel for exp (node 2)"
    with pytest.raises(GpuLabError) as info:
        host.execute(EXP, backend="cpu-python")
    assert info.value.code == "UNSUPPORTED"  # not BACKEND wrapping a KeyError


def test_a_cached_open_failure_keeps_no_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device that fails to open is remembered as its error, without the traceback: its
    frames would keep the first caller's locals (live tensors) alive for the process."""

    def failing_open(allow_software: bool) -> None:
        held = [object()]  # a local of the failing call's frames
        raise GpuLabError("UNAVAILABLE", f"test: no adapter ({len(held)})")

    monkeypatch.setitem(executors.EXECUTORS, executors.WGPU, failing_open)
    monkeypatch.setattr(executors.config, "opened", {})
    for _ in range(2):
        with pytest.raises(GpuLabError, match="UNAVAILABLE.*test: no adapter"):
            executors.open_executor(executors.WGPU, False)
    cached = executors.config.opened[(executors.WGPU, False)]
    assert isinstance(cached, GpuLabError) and cached.__traceback__ is None
