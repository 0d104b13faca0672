"""Shared fixtures for browser tests: one static server over the repo, one Chromium."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # so `e2e.*` helpers import in tests


@pytest.fixture(scope="session")
def server_url():
    """The repo root served with COOP/COEP and correct MIME types, on a free loopback port."""
    from gpulab.static_server import start_server

    srv = start_server(ROOT, host="127.0.0.1", port=0)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.fixture(scope="session")
def browser():
    from gpulab.conformance.browser import launch
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture()
def page(browser):
    ctx = browser.new_context()
    pg = ctx.new_page()
    pg.set_default_timeout(120_000)
    yield pg
    ctx.close()


@pytest.fixture()
def wg(page, server_url):
    """e2e/webgpu_test.html, loaded, with its helpers ready; returns a function evaluating JS in
    it (`wg` is window.wg there). A module may define its own (test_student_wgsl.py)."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server_url + "/e2e/webgpu_test.html")
    page.wait_for_function("window.wgReady === true", timeout=30_000)

    def run(body: str, arg: object = None) -> object:
        return page.evaluate(f"async (arg) => {{ const wg = window.wg; {body} }}", arg)

    yield run
    assert not errors, f"uncaught errors in the page: {errors}"
