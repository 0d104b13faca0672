"""Headless Chromium for the browser lanes: the system's Chromium, launched by Playwright.

Playwright cannot download its own browsers here, so the executable is the one named
(`gpulab conformance --browser PATH`), else GPULAB_CHROMIUM (an env var), else `chromium` on
PATH or /usr/bin/chromium. WebGPU in this Chromium is SwiftShader and WebGL2 is ANGLE on
SwiftShader: software adapters, so every lane that uses them passes allowSoftware and is
labelled software in its report.
"""

from __future__ import annotations

import os
import shutil

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-unsafe-webgpu",
    "--enable-features=Vulkan",
    "--use-vulkan=swiftshader",
    "--use-angle=swiftshader",
    "--ignore-gpu-blocklist",
]


def chromium_path(explicit: str | None = None) -> str:
    """Path of the Chromium binary to drive, or raise with what to install."""
    path = (
        explicit
        or os.environ.get("GPULAB_CHROMIUM")
        or shutil.which("chromium")
        or "/usr/bin/chromium"
    )
    if not os.path.exists(path):
        where = f"{explicit} (--browser) does not exist" if explicit else "Chromium not found"
        raise RuntimeError(
            f"{where}: name one with --browser PATH or GPULAB_CHROMIUM, or "
            "`apt-get install chromium` (make test does this)"
        )
    return path


def launch(playwright, executable: str | None = None):
    """Launch headless Chromium with the flags this machine needs."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    return playwright.chromium.launch(
        executable_path=chromium_path(executable), headless=True, args=CHROMIUM_FLAGS
    )
