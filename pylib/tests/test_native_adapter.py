"""The adapter policy: software adapters (lavapipe/llvmpipe, SwiftShader, softpipe, Microsoft
Basic Render, adapter_type "CPU") are refused unless allowed, with a reason naming them; when
allowed, results say software. The adapter is probed when an executor opens, not at import."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from gpulab import host
from gpulab.errors import GpuLabError
from gpulab.native import adapter as policy

wgpu = pytest.importorskip("wgpu", reason="wgpu-py is not installed")

GRAPH = {
    "version": 1,
    "nodes": [
        {"id": 0, "op": "input", "shape": [3], "data": [-2, 3, 4]},
        {"id": 1, "op": "input", "shape": [3], "data": [10, 20, 30]},
        {"id": 2, "op": "mul", "a": 0, "b": 1},
        {"id": 3, "op": "relu", "a": 2},
    ],
    "outputs": [{"name": "values", "id": 3}],
}


def _fake(device: str, adapter_type: str, backend: str = "Vulkan", vendor: str = "") -> Any:
    return SimpleNamespace(
        info={
            "vendor": vendor,
            "architecture": "",
            "device": device,
            "description": "",
            "adapter_type": adapter_type,
            "backend_type": backend,
        }
    )


@pytest.mark.parametrize(
    ("device", "adapter_type", "vendor"),
    [
        ("SwiftShader Device (Subzero)", "CPU", "Google"),
        ("Microsoft Basic Render Driver", "Unknown", "Microsoft"),
        ("softpipe", "Unknown", "Mesa"),
        ("llvmpipe (LLVM 15.0.6, 256 bits)", "Unknown", "llvmpipe"),
        ("some new rasterizer", "CPU", "x"),
    ],
)
def test_software_adapters_are_recognized(device: str, adapter_type: str, vendor: str) -> None:
    info = policy.adapter_info(_fake(device, adapter_type, vendor=vendor))
    assert info["software"] is True
    assert policy.software_reason(info)


def test_hardware_adapters_are_not_software() -> None:
    info = policy.adapter_info(_fake("NVIDIA H200", "DiscreteGPU", vendor="nvidia"))
    assert info["software"] is False and policy.software_reason(info) is None


def test_hardware_wins_and_native_apis_beat_opengl(monkeypatch: pytest.MonkeyPatch) -> None:
    adapters = [
        _fake("llvmpipe", "CPU"),
        _fake("Intel UHD", "IntegratedGPU", "OpenGL"),
        _fake("Intel UHD", "IntegratedGPU", "Vulkan"),
        _fake("RTX", "DiscreteGPU", "D3D12"),
    ]
    monkeypatch.setattr(wgpu.gpu, "enumerate_adapters_sync", lambda: adapters)
    chosen, info = policy.choose_adapter(False)
    assert chosen is adapters[3] and info["software"] is False
    monkeypatch.setattr(wgpu.gpu, "enumerate_adapters_sync", lambda: adapters[:3])
    assert policy.choose_adapter(False)[0] is adapters[2]


def test_only_software_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        wgpu.gpu,
        "enumerate_adapters_sync",
        lambda: [_fake("SwiftShader Device", "CPU", vendor="Google")],
    )
    with pytest.raises(GpuLabError) as err:
        policy.choose_adapter(False)
    assert err.value.code == "UNAVAILABLE"
    assert (
        "SwiftShader Device" in err.value.message and "GPULAB_ALLOW_SOFTWARE" in err.value.message
    )
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    assert policy.choose_adapter(None)[1]["software"] is True


def test_no_adapter_at_all_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wgpu.gpu, "enumerate_adapters_sync", list)
    with pytest.raises(GpuLabError) as err:
        policy.choose_adapter(True)
    assert err.value.code == "UNAVAILABLE" and "no adapter" in err.value.message


def _real_adapters() -> list[dict]:
    return [policy.adapter_info(a) for a in wgpu.gpu.enumerate_adapters_sync()]


def test_this_machines_adapters_follow_the_policy() -> None:
    """On the CI machine lavapipe is the only adapter: refused, then allowed and labelled."""
    infos = _real_adapters()
    assert infos, "no wgpu adapter at all: install mesa-vulkan-drivers (lavapipe)"
    if any(not i["software"] for i in infos):
        assert policy.choose_adapter(False)[1]["software"] is False
        return
    with pytest.raises(GpuLabError) as err:
        policy.choose_adapter(False)
    assert err.value.code == "UNAVAILABLE"
    assert "llvmpipe" in err.value.message or "lavapipe" in err.value.message
    assert policy.choose_adapter(True)[1]["software"] is True


def test_host_wgpu_backend_refuses_or_labels_software() -> None:
    software_only = all(i["software"] for i in _real_adapters())
    if software_only:
        with pytest.raises(GpuLabError) as err:
            host.execute(GRAPH, backend="wgpu", allow_software=False)
        assert err.value.code == "UNAVAILABLE" and "llvmpipe" in err.value.message
    result = host.execute(GRAPH, backend="wgpu", allow_software=True)
    assert result["backend"] == "wgpu"
    assert result["outputs"]["values"]["data"] == [0.0, 60.0, 120.0]
    assert result["stats"]["software"] is software_only
    assert result["stats"]["adapter"]["backend_type"]


def test_importing_the_executor_touches_no_gpu() -> None:
    code = (
        "import sys, gpulab.native.wgpu_executor, gpulab.native.planner; "
        "print('wgpu' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"
