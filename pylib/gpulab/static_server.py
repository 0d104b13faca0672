"""A small threaded static file server with the headers the playground needs.

COOP/COEP make the page cross-origin isolated (SharedArrayBuffer, used to interrupt Python);
`.mjs`/`.wasm` get their proper MIME types. Folders are never listed (a folder without an
index.html is 404: the checkout's tree is nobody's business), HEAD goes through the routes as
GET does, and a client that stalls mid-request is dropped after `timeout` seconds. `gpulab serve` and the browser tests share it; the
playground server adds its routes (`/api/execute`, the pylib wheel) through `routes`.
"""

from __future__ import annotations

import mimetypes
import threading
from collections.abc import Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

MIME = {
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".wasm": "application/wasm",
    ".json": "application/json",
    ".wgsl": "text/plain; charset=utf-8",
    ".glsl": "text/plain; charset=utf-8",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".py": "text/plain; charset=utf-8",
}

Route = Callable[[SimpleHTTPRequestHandler], bool]


class Handler(SimpleHTTPRequestHandler):
    """Static files plus optional routes; every answer is cross-origin isolated."""

    routes: ClassVar[list[Route]] = []
    extensions_map: ClassVar[dict[str, str]] = {**mimetypes.types_map, **MIME}
    timeout = 30  # seconds a socket read may wait (a stalled or slow-loris client ends)

    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def _route(self) -> bool:
        return any(route(self) for route in self.routes)

    def do_GET(self) -> None:
        if not self._route():
            super().do_GET()

    def do_HEAD(self) -> None:
        if not self._route():
            super().do_HEAD()

    def list_directory(self, path: str) -> None:  # type: ignore[override]
        self.send_error(404, "File not found")  # no directory listings

    def do_POST(self) -> None:
        if not self._route():
            self.send_error(404, "no such endpoint")

    def _other_method(self) -> None:
        """PUT, DELETE, PATCH, OPTIONS: a route may answer them (the API answers 405 with its
        Allow); elsewhere 405 naming what is served (http.server's default was 501 HTML)."""
        if not self._route():
            self.send_response(405)
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Length", "0")
            self.end_headers()

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _other_method

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: tests and the playground print their own progress


def start_server(
    root: Path, host: str = "127.0.0.1", port: int = 0, routes: list[Route] | None = None
) -> ThreadingHTTPServer:
    """Serve `root` in a daemon thread; returns the server (its `server_address` has the port)."""
    handler = type("BoundHandler", (Handler,), {"routes": list(routes or [])})
    srv = ThreadingHTTPServer((host, port), partial(handler, directory=str(root)))
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
