"""Headless Chromium for the browser tests: the conformance suite's own finder and launcher
(e2e/conformance/browser.py, which ships in the wheel), re-exported for the e2e tests.

A WebGPU canvas (the playground's live views, display.animate) needs Skia on Vulkan: the flags
--enable-features=Vulkan, --use-vulkan=swiftshader and --use-angle=swiftshader, all three in
CHROMIUM_FLAGS. Verified with Chromium 156 here (2026-12-01): with them e2e/test_animate.py's
glider passes on WebGPU; without any one of them the first present loses the device ("A valid
external Instance reference no longer exists") and no frame is drawn (docs/playground.md)."""

from e2e.conformance.browser import CHROMIUM_FLAGS, chromium_path, launch

__all__ = ["CHROMIUM_FLAGS", "chromium_path", "launch"]
