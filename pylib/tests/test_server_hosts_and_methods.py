"""`gpulab serve`'s small hardening: every file answers only requests naming this server in
Host (DNS rebinding), PUT/DELETE/PATCH/OPTIONS get 405 with Allow (not 501 HTML), the model
files have a lock each (config.json does not wait behind a quantization), and the server runs
its graphs in a child process by default (native_child.py; test_native_child.py kills it)."""

from __future__ import annotations

import http.client
import threading
from pathlib import Path

import pytest
from gpulab import server
from gpulab.playground import api
from gpulab.playground.models import ModelFiles

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def port():
    srv = server.serve(ROOT, server.MemoryFiles({}), executor=api.default_executor)
    yield srv.server_address[1]
    server.stop(srv)


def request(port: int, method: str, path: str, headers: dict[str, str] | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), body


@pytest.mark.parametrize("path", ["/", "/index.html", "/backends-js/src/runtime.mjs", "/models/x"])
def test_static_files_answer_only_this_servers_host(port, path):
    """A page of another name (rebound to 127.0.0.1) cannot read the site: 403; our own
    name still gets the file."""
    status, _, _ = request(port, "GET", path, {"Host": f"evil.example:{port}"})
    assert status == 403
    if path != "/models/x":
        assert request(port, "GET", path)[0] == 200


def test_the_api_answers_a_foreign_host_with_its_own_json_permission_error(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/api/execute", body=b"{}", headers={"Host": f"evil.example:{port}"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 403 and b'"code": "PERMISSION"' in body and b"evil.example" in body


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_on_the_api_answer_405_with_allow(port, method):
    status, headers, body = request(
        port, method, "/api/execute", {"Origin": f"http://127.0.0.1:{port}"}
    )
    assert status == 405 and headers.get("Allow") == "POST"
    assert b'"code": "VALIDATION"' in body and method.encode() in body


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_on_files_answer_405_with_allow(port, method):
    status, headers, _ = request(port, method, "/index.html")
    assert status == 405 and headers.get("Allow") == "GET, HEAD"


def test_a_model_file_does_not_wait_behind_another_being_made(monkeypatch):
    """A quantized variant takes seconds to make; config.json, asked meanwhile, is served at
    once (one lock for every file made it wait 14 s)."""
    files = ModelFiles()
    making, release = threading.Event(), threading.Event()

    def make(name: str) -> bytes:
        if name.startswith("model.q4_k"):
            making.set()
            assert release.wait(60)
        return name.encode()

    monkeypatch.setattr(files, "_make", make)
    slow = threading.Thread(target=files.file, args=("model.q4_k.safetensors",), daemon=True)
    slow.start()
    assert making.wait(60)
    done = threading.Event()
    got: list[bytes] = []
    quick = threading.Thread(
        target=lambda: (got.append(files.file("config.json")), done.set()), daemon=True
    )
    quick.start()
    try:
        assert done.wait(20), "config.json waited behind the quantization"
        assert got == [b"config.json"]
    finally:
        release.set()
        slow.join(60)
    assert files.file("model.q4_k.safetensors") == b"model.q4_k.safetensors"


def test_serve_runs_graphs_in_a_child_process_by_default(monkeypatch):
    """Without an executor the server makes its child-process executor (started at once: the
    first request finds a warm process) and stop() ends it."""
    made: list = []

    class Recorder:
        def __init__(self, deadline_s: float) -> None:
            self.deadline_s, self.started, self.closed = deadline_s, False, False
            made.append(self)

        def start(self) -> None:
            self.started = True

        def close(self) -> None:
            self.closed = True

        def __call__(self, graph: dict) -> dict:
            raise AssertionError("not called here")

    monkeypatch.setattr(server, "ChildExecutor", Recorder)
    srv = server.serve(ROOT, server.MemoryFiles({}))
    try:
        assert len(made) == 1 and made[0].started and srv.executor is made[0]  # type: ignore[attr-defined]
        assert made[0].deadline_s == server.Quotas().deadline_s
    finally:
        server.stop(srv)
    assert made[0].closed
