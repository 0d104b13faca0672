"""The dropout session on the page backends in headless Chromium: 5 session steps fed
counters 0..4 equal 5 chained executes bit for bit, and successive counters give different
masks (backends-js/test/dropout-session.mjs; the node backends run it in
dropout-session.test.mjs, cpu-python and wgpu in pylib/tests/test_v3_ops.py). WebGPU and
WebGL2 are software adapters here (SwiftShader), allowed explicitly."""

from __future__ import annotations

import pytest

PAGE = "/e2e/webgpu_test.html"


@pytest.mark.parametrize("backend", ["webgpu", "webgl2", "wasm", "cpu"])
def test_dropout_session_equals_chained_executes(page, server_url, backend: str) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server_url + PAGE)
    page.wait_for_function("window.wgReady === true", timeout=30_000)
    r = page.evaluate(
        """async (backend) => {
          const { dropoutSessionCheck } = await import('/backends-js/test/dropout-session.mjs');
          const rt = await window.wg.runtime.createRuntime({backend, allowSoftware: true});
          const out = await dropoutSessionCheck(rt);
          rt.dispose();
          return out;
        }""",
        backend,
    )
    assert not errors, errors
    assert r["backend"] == backend
    assert r["session"] == r["chained"]
    assert all(2900 < k < 3250 for k in r["kept"]), r["kept"]  # p = 0.25 keeps about 3/4
    assert all(c > 1200 for c in r["changed"]), r["changed"]  # a fresh mask every step
