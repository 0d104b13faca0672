"""Headless Chromium for the browser tests: the conformance suite's own finder and launcher
(e2e/conformance/browser.py, which ships in the wheel), re-exported for the e2e tests."""

from e2e.conformance.browser import CHROMIUM_FLAGS, chromium_path, launch

__all__ = ["CHROMIUM_FLAGS", "chromium_path", "launch"]
