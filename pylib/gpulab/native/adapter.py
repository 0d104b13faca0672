"""Which wgpu adapter gpulab uses, and why others are refused.

Software rasterizers (lavapipe/llvmpipe, SwiftShader, softpipe, Microsoft Basic Render, or any
adapter wgpu reports as type "CPU") are refused unless software is explicitly allowed
(`allow_software=True` or GPULAB_ALLOW_SOFTWARE=1): a missing GPU is not a successful GPU check.
When one is used, `info["software"]` is True so every result says so.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import GpuLabError

SOFTWARE_NAMES = ("swiftshader", "llvmpipe", "lavapipe", "softpipe", "microsoft basic render")
# Preferred first: a discrete GPU on a native API; OpenGL last (wgpu's GL path is the weakest).
TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "Unknown": 3, "CPU": 4}
BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 2}


def software_allowed(allow_software: bool | None) -> bool:
    """The explicit argument, else GPULAB_ALLOW_SOFTWARE=1 (or true/yes), as gpulab.host reads it."""
    if allow_software is not None:
        return bool(allow_software)
    return os.environ.get("GPULAB_ALLOW_SOFTWARE", "0").strip().lower() in ("1", "true", "yes")


def adapter_info(adapter: Any) -> dict[str, Any]:
    """The adapter's identity as plain data (the executor's `info`)."""
    raw = adapter.info
    device = str(raw.get("device", "") or "")
    description = str(raw.get("description", "") or "")
    info = {
        "vendor": str(raw.get("vendor", "") or ""),
        "architecture": str(raw.get("architecture", "") or ""),
        "description": ", ".join(x for x in (device, description) if x),
        "adapter_type": str(raw.get("adapter_type", "") or ""),
        "backend_type": str(raw.get("backend_type", "") or ""),
    }
    info["software"] = software_reason(info) is not None
    return info


def software_reason(info: dict[str, Any]) -> str | None:
    """Why an adapter counts as software (None for a hardware adapter)."""
    reasons = []
    text = " ".join(str(info.get(k, "")) for k in ("vendor", "architecture", "description"))
    reasons += [f"its name contains {name!r}" for name in SOFTWARE_NAMES if name in text.lower()]
    if info.get("adapter_type") == "CPU":
        reasons.append('wgpu reports adapter_type "CPU"')
    return "; ".join(reasons) or None


def describe(info: dict[str, Any]) -> str:
    """One line naming an adapter, e.g. 'llvmpipe (LLVM 15.0.6, 256 bits) [Vulkan, CPU]'."""
    name = info.get("description") or info.get("vendor") or "unnamed adapter"
    return f"{name} [{info.get('backend_type', '?')}, {info.get('adapter_type', '?')}]"


def choose_adapter(allow_software: bool | None = None) -> tuple[Any, dict[str, Any]]:
    """The best usable adapter and its info, or GpuLabError(UNAVAILABLE) naming every refusal."""
    allowed = software_allowed(allow_software)
    try:
        import wgpu
    except ImportError as err:
        raise GpuLabError(
            "UNAVAILABLE", f"wgpu-py is not installed ({err}); pip install gpulab[native]"
        ) from err
    try:
        adapters = list(wgpu.gpu.enumerate_adapters_sync())
    except Exception as err:  # a broken loader/driver: say so instead of crashing
        raise GpuLabError("UNAVAILABLE", f"wgpu could not enumerate adapters: {err}") from err
    if not adapters:
        raise GpuLabError("UNAVAILABLE", "wgpu found no adapter (no Vulkan/Metal/D3D12/GL driver)")
    candidates = sorted(((adapter_info(a), a) for a in adapters), key=_rank)
    refused = []
    for info, adapter in candidates:
        reason = software_reason(info)
        if reason is None or allowed:
            return adapter, info
        refused.append(f"refused software adapter {describe(info)}: {reason}")
    raise GpuLabError(
        "UNAVAILABLE",
        "; ".join(refused) + " (allow it with allow_software=True or GPULAB_ALLOW_SOFTWARE=1)",
    )


def _rank(item: tuple[dict[str, Any], Any]) -> tuple[int, int, int]:
    info = item[0]
    software = 1 if info["software"] else 0
    return (
        software,
        TYPE_RANK.get(info["adapter_type"], 3),
        BACKEND_RANK.get(info["backend_type"], 1),
    )
