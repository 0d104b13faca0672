"""`gpulab serve`: the playground, offline, on one port.

What is served (all from this checkout, never a CDN):
- `/` the notebook (web/); `/vendor/pyodide/` the Pyodide core with a generated lock file, the
  micropip wheel and a wheel of this very `gpulab`, built at start (web/vendor/, git-ignored);
- `/backends-js/` and `/kernels/` (the JS runtime reads its kernels from there);
- `POST /api/execute`, the native half of "Compare with native", run in a child process
  (gpulab.playground.native_child: a crash in naga or the driver, or a shader past its deadline,
  ends that process and a warm spare answers the next request; the server goes on);
- `/models/all-MiniLM-L6-v2/` MiniLM's checkpoint from the installed `gpulab[models]` package
  (gpulab.playground.models; a 404 that says how to install it otherwise);
- `/models/llm/model.gguf` the local file of `--model PATH` (a GGUF language model for the page:
  `await llm.load_async("/models/llm/model.gguf")`), streamed from disk.
Every answer carries COOP/COEP (static_server), so the page is cross-origin isolated and its Stop
button can interrupt Python through a SharedArrayBuffer. Every request must name this server in
its Host header (HostCheck: a foreign name resolving to this address, DNS rebinding, gets 403
for the static files as the API does).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from gpulab.errors import GpuLabError
from gpulab.models.llm.model import SERVED_MODEL_URL
from gpulab.playground.api import ExecuteEndpoint, Executor
from gpulab.playground.models import ModelFiles
from gpulab.playground.native_child import ChildExecutor
from gpulab.playground.vendor import link_npm_files, prepare_index
from gpulab.playground.wheel import build_wheel, project_version, wheel_name
from gpulab.quotas import Quotas
from gpulab.static_server import Route, start_server


def find_repo_root() -> Path:
    """The checkout this package lives in (pylib/gpulab/server.py -> repo root)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "web" / "index.html").exists():
        raise FileNotFoundError(
            f"web/index.html not found under {root}: `gpulab serve` runs from a source checkout"
        )
    return root


@dataclass(frozen=True)
class Mount:
    """Serve the files of `directory` under the URL prefix `prefix` (GET and HEAD)."""

    prefix: str
    directory: Path

    def __call__(self, handler: SimpleHTTPRequestHandler) -> bool:
        if handler.command not in ("GET", "HEAD") or not handler.path.startswith(self.prefix):
            return False
        # translate_path() drops '..' segments, so nothing outside `directory` is reachable.
        handler.path = "/" + handler.path[len(self.prefix) :]
        handler.directory = str(self.directory)
        if handler.command == "HEAD":
            SimpleHTTPRequestHandler.do_HEAD(handler)
        else:
            SimpleHTTPRequestHandler.do_GET(handler)
        return True


@dataclass(frozen=True)
class MemoryFiles:
    """Serve fixed bytes at exact URL paths (the generated lock file and the gpulab wheel)."""

    files: dict[str, tuple[bytes, str]]

    def __call__(self, handler: SimpleHTTPRequestHandler) -> bool:
        entry = self.files.get(handler.path.split("?", 1)[0])
        if handler.command not in ("GET", "HEAD") or entry is None:
            return False
        data, content_type = entry
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if handler.command == "GET":
            handler.wfile.write(data)
        return True


MODEL_URL = SERVED_MODEL_URL  # where the page looks for it: gpulab.models.llm.served_model


@dataclass(frozen=True)
class LocalFile:
    """Serve one file of this machine at one URL path (GET and HEAD), streamed from disk in
    chunks (a model file may be larger than memory wants to hold twice)."""

    url: str
    path: Path

    def __call__(self, handler: SimpleHTTPRequestHandler) -> bool:
        if handler.command not in ("GET", "HEAD") or handler.path.split("?", 1)[0] != self.url:
            return False
        try:
            size = self.path.stat().st_size
            source = self.path.open("rb") if handler.command == "GET" else None
        except OSError as err:
            handler.send_error(404, f"{self.path.name}: {err.strerror}")
            return True
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(size))
        handler.end_headers()
        if source is not None:
            with source:
                shutil.copyfileobj(source, handler.wfile, 1 << 20)
        return True


def prepare_site(root: Path) -> MemoryFiles:
    """Build the gpulab wheel and the offline Pyodide index; return the in-memory files."""
    version = project_version(root / "pyproject.toml")
    wheel = (wheel_name(version), build_wheel(root / "pylib" / "gpulab", version))
    vendor = root / "web" / "vendor"
    lock = prepare_index(
        root / "node_modules" / "pyodide", vendor / "wheels", vendor / "pyodide", wheel
    )
    link_npm_files(root / "node_modules", vendor / "npm")  # the notebook's markdown renderer
    return MemoryFiles(
        {
            "/vendor/pyodide/pyodide-lock.json": (lock, "application/json"),
            f"/vendor/pyodide/{wheel[0]}": (wheel[1], "application/zip"),
        }
    )


@dataclass
class HostCheck:
    """The route before the files: a request whose Host header does not name this server gets 403 (a
    foreign name resolving to 127.0.0.1 must not read the site through a student's browser);
    `allowed` is filled once the server has its port."""

    allowed: set[str] = field(default_factory=set)

    def __call__(self, handler: SimpleHTTPRequestHandler) -> bool:
        host = (handler.headers.get("Host") or "").lower()
        if host in self.allowed:
            return False
        handler.send_error(403, f"Host {host!r} is not this server")
        return True


def allowed_hosts(host: str, port: int) -> set[str]:
    """Host header values naming this server (the page may be opened by name or by address;
    bound to every interface, also by this machine's name and address)."""
    names = {host}
    if host in ("127.0.0.1", "localhost", "0.0.0.0", "", "::"):
        names |= {"localhost", "127.0.0.1"}
    if host in ("0.0.0.0", "", "::"):
        hostname = socket.gethostname()
        names.add(hostname)
        try:
            names.add(socket.gethostbyname(hostname))
        except OSError:
            pass  # no resolvable name: loopback names still work
    return {f"{name}:{port}" for name in names if name}


def start(
    host: str = "127.0.0.1",
    port: int = 0,
    executor: Executor | None = None,
    quotas: Quotas | None = None,
    model: Path | None = None,
) -> ThreadingHTTPServer:
    """Prepare the site and serve it in a daemon thread (tests use port 0: a free port).
    `quotas`: what one /api/execute graph may take (default: gpulab.quotas' defaults);
    `executor`: what runs its graphs (default: a child process, server_executor);
    `model`: a local file served at MODEL_URL."""
    root = find_repo_root()
    return serve(root, prepare_site(root), host, port, executor, quotas, model)


def server_executor(quotas: Quotas) -> ChildExecutor:
    """The server's native executor: each graph runs in a child process killed past the
    deadline or replaced after a crash (native_child.py); started now, so the first request
    finds a warm process."""
    executor = ChildExecutor(deadline_s=quotas.deadline_s)
    executor.start()
    return executor


def serve(
    root: Path,
    generated: MemoryFiles,
    host: str = "127.0.0.1",
    port: int = 0,
    executor: Executor | None = None,
    quotas: Quotas | None = None,
    model: Path | None = None,
) -> ThreadingHTTPServer:
    """The server of `start` from prepared files (tests pass none: no wheel build). The
    executor is the server's `executor` attribute; `stop` closes it."""
    quotas = quotas if quotas is not None else Quotas()
    run = executor if executor is not None else server_executor(quotas)
    hosts = HostCheck()
    endpoint = ExecuteEndpoint(set(), run, quotas=quotas)
    routes: list[Route] = [
        endpoint,  # checks Host itself, answering the API's JSON PERMISSION
        hosts,  # every other path
        generated,
        ModelFiles(),  # /models/all-MiniLM-L6-v2/...: the installed checkpoint
        Mount("/backends-js/", root / "backends-js"),
        Mount("/kernels/", root / "kernels"),
    ]
    if model is not None:
        routes.append(LocalFile(MODEL_URL, model))
    try:
        srv = start_server(root / "web", host=host, port=port, routes=routes)
    except OSError:
        _close(run)
        raise
    hosts.allowed = endpoint.allowed_hosts = allowed_hosts(host, srv.server_address[1])
    srv.executor = run  # type: ignore[attr-defined]
    return srv


def stop(srv: ThreadingHTTPServer) -> None:
    """Stop serving and end the executor's processes."""
    srv.shutdown()
    srv.server_close()
    _close(getattr(srv, "executor", None))


def _close(executor: object) -> None:
    close = getattr(executor, "close", None)
    if callable(close):
        close()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gpulab serve", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any)")
    parser.add_argument(
        "--gpu-memory-mib",
        type=int,
        default=256,
        help="device memory one /api/execute graph may take, in MiB (default 256, at most 1536)",
    )
    parser.add_argument(
        "--model",
        metavar="PATH",
        help=f"a local GGUF model file to serve to the page at {MODEL_URL}",
    )
    return parser.parse_args(argv)


def main(args: Sequence[str] | argparse.Namespace | None = None) -> int:
    """Entry point of `gpulab serve`: takes argv (list) or the CLI's parsed namespace."""
    ns = args if isinstance(args, argparse.Namespace) else parse_args(args)
    host = getattr(ns, "host", None) or "127.0.0.1"
    port = getattr(ns, "port", None)
    try:
        quotas = Quotas(memory_bytes=int(getattr(ns, "gpu_memory_mib", 256)) * 1024 * 1024)
    except GpuLabError as err:
        print(f"gpulab serve: {err.message}", file=sys.stderr)
        return 2
    model = getattr(ns, "model", None)
    if model is not None and not Path(model).is_file():
        print(f"gpulab serve: --model {model}: no such file", file=sys.stderr)
        return 2
    try:
        srv = start(
            host,
            8000 if port is None else int(port),
            quotas=quotas,
            model=Path(model) if model is not None else None,
        )
    except OSError as err:  # port taken, address not ours, missing set-up files
        print(f"gpulab serve: cannot start on {host}:{port}: {err}", file=sys.stderr)
        return 1
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    print(
        f"GPU Lab playground: http://{shown}:{srv.server_address[1]}/  (Ctrl+C to stop)", flush=True
    )
    if model is not None:
        print(f"model {model} at http://{shown}:{srv.server_address[1]}{MODEL_URL}", flush=True)
    try:
        threading.Event().wait()  # the server runs in its own thread; wait for Ctrl+C
    except KeyboardInterrupt:
        pass
    finally:
        stop(srv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
