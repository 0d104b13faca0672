"""The playground server without a browser: what it serves, with which headers, and what it
refuses. (The page itself is tested in test_playground.py.)"""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import zipfile
from pathlib import Path

import pytest
from gpulab.playground.wheel import build_wheel

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server():
    from gpulab.server import start, stop

    srv = start("127.0.0.1", 0)
    yield srv.server_address[1]
    stop(srv)


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def test_lock_names_the_served_wheels_with_their_sha256(server: int) -> None:
    status, headers, body = get(server, "/vendor/pyodide/pyodide-lock.json")
    assert status == 200 and headers["content-type"] == "application/json"
    lock = json.loads(body)
    assert set(lock["packages"]) == {"micropip", "gpulab"}, "only what we serve is named"
    for entry in lock["packages"].values():
        status, _, wheel = get(server, f"/vendor/pyodide/{entry['file_name']}")
        assert status == 200, entry["file_name"]
        assert hashlib.sha256(wheel).hexdigest() == entry["sha256"], entry["name"]
    assert lock["packages"]["micropip"]["file_name"] == "micropip-0.11.1-py3-none-any.whl"


def test_gpulab_wheel_is_pure_python_and_reproducible() -> None:
    first = build_wheel(ROOT / "pylib" / "gpulab", "0.1.0")
    assert first == build_wheel(ROOT / "pylib" / "gpulab", "0.1.0"), "same sources, same bytes"
    names = zipfile.ZipFile(io.BytesIO(first)).namelist()
    assert "gpulab/__init__.py" in names and "gpulab/pyodide_bridge.py" in names
    assert "gpulab/ops.json" in names
    assert "gpulab-0.1.0.dist-info/RECORD" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.startswith("gpulab/playground/")], "server code stays out"


def test_pages_are_cross_origin_isolated_with_module_mime_types(server: int) -> None:
    status, headers, body = get(server, "/")
    assert status == 200 and b"GPU Lab" in body
    assert headers["cross-origin-opener-policy"] == "same-origin"
    assert headers["cross-origin-embedder-policy"] == "require-corp"
    for path in (
        "/worker.mjs",
        "/backends-js/src/python-adapter.mjs",
        "/vendor/pyodide/pyodide.mjs",
    ):
        status, headers, _ = get(server, path)
        assert status == 200 and headers["content-type"] == "text/javascript", path
    status, headers, _ = get(server, "/vendor/pyodide/pyodide.asm.wasm")
    assert status == 200 and headers["content-type"] == "application/wasm"


def test_mounts_do_not_reach_outside_their_folders(server: int) -> None:
    for path in (
        "/backends-js/../pyproject.toml",
        "/backends-js/%2e%2e/pyproject.toml",
        "/kernels/../../etc/passwd",
        "/../pyproject.toml",
    ):
        status, _, body = get(server, path)
        assert status == 404 or b"[project]" not in body, path


def test_api_refuses_a_foreign_host_header(server: int) -> None:
    """DNS rebinding: a foreign name resolving to 127.0.0.1 sends its own Host header."""
    conn = http.client.HTTPConnection("127.0.0.1", server, timeout=30)
    body = json.dumps({"version": 1, "nodes": [], "outputs": []})
    conn.request(
        "POST",
        "/api/execute",
        body=body,
        headers={
            "Host": f"rebind.example:{server}",
            "Origin": f"http://rebind.example:{server}",
            "Content-Type": "application/json",
        },
    )
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    assert response.status == 403 and "rebind.example" in answer["message"]


def test_allowed_hosts() -> None:
    from gpulab.server import allowed_hosts

    assert allowed_hosts("127.0.0.1", 8000) == {"127.0.0.1:8000", "localhost:8000"}
    assert allowed_hosts("192.0.2.7", 9000) == {"192.0.2.7:9000"}
    assert {"127.0.0.1:1", "localhost:1"} <= allowed_hosts("0.0.0.0", 1)


def test_serve_reports_a_taken_port(server: int, capsys: pytest.CaptureFixture) -> None:
    from gpulab.server import main

    assert main(["--port", str(server)]) == 1
    assert "cannot start" in capsys.readouterr().err


def test_api_answers_graphs_past_the_protocol_limits_with_limit(server: int) -> None:
    origin = f"http://127.0.0.1:{server}"
    too_big = {
        "version": 1,
        "nodes": [{"id": 0, "op": "full", "shape": [8192, 8193], "value": 1.0}],
        "outputs": [{"name": "x", "id": 0}],
    }
    too_many = {
        "version": 1,
        "nodes": [{"id": i, "op": "full", "shape": [1], "value": 0.0} for i in range(10_001)],
        "outputs": [{"name": "x", "id": 0}],
    }
    for graph in (too_big, too_many):
        conn = http.client.HTTPConnection("127.0.0.1", server, timeout=60)
        conn.request(
            "POST",
            "/api/execute",
            body=json.dumps(graph),
            headers={"Origin": origin, "Content-Type": "application/json"},
        )
        response = conn.getresponse()
        answer = json.loads(response.read())
        conn.close()
        assert response.status == 400 and answer["code"] == "LIMIT", answer


def _execute(port: int, graph: dict) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "POST",
        "/api/execute",
        body=json.dumps(graph),
        headers={"Origin": f"http://127.0.0.1:{port}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    return response.status, answer


def test_api_takes_and_answers_base64_data(server: int) -> None:
    """Data as bytes both ways: {"base64": little-endian float32} in; every output answered
    once, as base64 of its dtype (no JSON list, no numpy array serialized beside it)."""
    import array
    import base64

    def b64(values: list[float]) -> dict:
        return {"base64": base64.b64encode(array.array("f", values).tobytes()).decode()}

    graph = {
        "version": 1,
        "nodes": [
            {"id": 0, "op": "input", "shape": [3], "data": b64([-2, 3, float("nan")])},
            {"id": 1, "op": "input", "shape": [3], "data": [10, 20, 30]},
            {"id": 2, "op": "mul", "a": 0, "b": 1},
            {"id": 3, "op": "sub", "a": 1, "b": 2},
        ],
        "outputs": [{"name": "y", "id": 3}],
    }
    status, answer = _execute(server, graph)
    assert status == 200, answer
    out = answer["outputs"]["y"]
    assert set(out) == {"shape", "dtype", "data"} and set(out["data"]) == {"base64"}
    values = array.array("f", base64.b64decode(out["data"]["base64"]))
    assert values[:2].tolist() == [30.0, -40.0] and values[2] != values[2]  # NaN
    assert out["shape"] == [3] and out["dtype"] == "float32"
    graph["nodes"][0]["data"] = {"base64": "not base64!"}
    status, answer = _execute(server, graph)
    assert status == 400 and answer["code"] == "VALIDATION" and answer["node"] == 0, answer
