"""`gpulab serve --model PATH`: the local model file at /models/llm/model.gguf, streamed whole
(GET), its length alone (HEAD), a 404 naming the file when it went away; a missing path is
refused before the server starts. Started without the Pyodide site (the route alone)."""

from __future__ import annotations

import http.client
from pathlib import Path

from gpulab import server
from gpulab.server import MODEL_URL, LocalFile
from gpulab.static_server import start_server

ROOT = Path(__file__).resolve().parents[2]


def request(port: int, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def test_the_model_file_is_served_whole(tmp_path: Path) -> None:
    data = bytes(range(256)) * 9000  # 2.3 MB: several of the route's 1 MiB chunks
    model = tmp_path / "tiny.gguf"
    model.write_bytes(data)
    srv = start_server(ROOT / "web", routes=[LocalFile(MODEL_URL, model)])
    port = srv.server_address[1]
    try:
        status, headers, body = request(port, "GET", MODEL_URL + "?v=1")
        assert status == 200 and body == data
        assert headers["Content-Length"] == str(len(data))
        assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"  # the page can read it
        status, headers, body = request(port, "HEAD", MODEL_URL)
        assert status == 200 and body == b"" and headers["Content-Length"] == str(len(data))
        assert request(port, "GET", "/models/llm/other.gguf")[0] == 404
        model.unlink()
        status, _, body = request(port, "GET", MODEL_URL)
        assert status == 404 and b"tiny.gguf" in body
    finally:
        srv.shutdown()


def test_a_model_path_that_is_not_a_file_is_refused_before_serving(tmp_path: Path, capsys) -> None:
    assert server.main(["--port", "0", "--model", str(tmp_path / "missing.gguf")]) == 2
    assert "missing.gguf: no such file" in capsys.readouterr().err
