"""The server's native executor in a child process (`gpulab serve`, `POST /api/execute`).

A student's kernel reaches naga and the driver (lavapipe here): a crash there (a segfault) took
the whole server down, and a shader past its deadline kept running after the answer (the next
request waited 13.5 s behind it: a running shader cannot be interrupted, only its process
killed). So the server runs every graph in a child process (`python -m
gpulab.playground.native_child`) and
- a child that dies (a signal, an exit) is replaced, and the request gets BACKEND naming what
  killed it;
- a child that has not answered within the request's wall time (`wall_s`: the server's
  deadline plus a grace) is killed (SIGKILL ends its shader threads at once) and replaced, and
  the request gets BACKEND naming the deadline; a child whose device passed its per-submission
  deadline itself (gpulab.native.deadline) answers, and is then replaced the same way;
- one warm spare child (its device opened, a small graph run: about 4 s of lavapipe start-up)
  waits beside the active one, so the request after a crash is answered by a ready process, not
  after a cold start; a new spare starts in the background.
The CLI and the library (`gpulab run`, `host.execute`) keep running in-process.

The protocol, over the child's stdin and stdout (the child moves anything else printed to
stdout onto stderr): frames of an 8-byte big-endian length and a payload. The parent sends a
JSON start frame ({"software", "gpu"}), then one JSON request per graph ({"graph", "software",
"gpu", "deadline_s"}); the child answers with a JSON frame ({"ready"}, or {"ok": true,
"backend", "stats", "outputs": [[name, shape, dtype], ...], "lost"} followed by one frame of
raw little-endian bytes per output, or {"error": {code, message, node}, "lost"}). The parent
parses only JSON and bytes from the child, never a pickle: the child is where untrusted
kernels run.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any, BinaryIO

from gpulab.errors import GpuLabError

START_TIMEOUT_S = 120.0  # a child's start-up (device open, warm-up) on a loaded machine
GRACE_S = 5.0  # past the request's own deadline before the parent kills the child
HEADER = 8


# ---------------------------------------------------------------- frames


def write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(len(payload).to_bytes(HEADER, "big") + payload)
    stream.flush()


def read_frame(stream: BinaryIO) -> bytes | None:
    """One frame, or None at the end of the stream."""
    head = _read_exactly(stream, HEADER)
    if head is None:
        return None
    body = _read_exactly(stream, int.from_bytes(head, "big"))
    if body is None:
        raise EOFError("the stream ended inside a frame")
    return body


def _read_exactly(stream: BinaryIO, n: int) -> bytes | None:
    parts = []
    got = 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            if got == 0:
                return None
            raise EOFError("the stream ended inside a frame")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


# ---------------------------------------------------------------- the child


def _configure(software: bool, gpu: bool) -> None:
    from gpulab import executors

    if (executors.config.allow_software, executors.config.gpu) != (software, gpu):
        executors.configure(gpu=gpu, allow_software=software)


def _warm_up() -> None:
    """Open the device and compile the kernels of a small graph (the ready child's first
    answer is then quick)."""
    from gpulab import host
    from gpulab.graph import Graph

    g = Graph()
    a = g.tensor([1.0, 2.0, 3.0, 4.0])
    with contextlib.suppress(GpuLabError):
        host.execute(g.to_dict(y=a + a))


def _run(request: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    """The answer's header and output frames for one request."""
    from gpulab import executors, host
    from gpulab.cpu.deadline import deadline
    from gpulab.playground.api import as_error, json_safe

    _configure(bool(request.get("software")), bool(request.get("gpu", True)))
    opened = list(executors.config.opened.values())  # a BACKEND failure drops them from config
    frames: list[bytes] = []
    try:
        with deadline(request.get("deadline_s")):
            result = host.execute(request["graph"])
        outputs = []
        for name, entry in result["outputs"].items():
            arr = entry["array"]
            frames.append(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
            outputs.append([str(name), list(entry["shape"]), str(entry["dtype"])])
        header: dict[str, Any] = {
            "ok": True,
            "backend": result["backend"],
            "stats": json_safe(result["stats"]),
            "outputs": outputs,
        }
    except Exception as err:  # noqa: BLE001 - every failure is answered
        header = {"error": as_error(err)}
        frames = []
    opened += list(executors.config.opened.values())
    header["lost"] = any(getattr(ex, "lost", None) for ex in opened)
    return header, frames


def child_main() -> int:
    """The child's loop: start frame, warm-up, then one answer per request until stdin ends."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # native libraries that print to stdout must not corrupt the frames
    requests = sys.stdin.buffer
    start = read_frame(requests)
    if start is None:
        return 0
    options = json.loads(start)
    _configure(bool(options.get("software")), bool(options.get("gpu", True)))
    t0 = time.perf_counter()
    _warm_up()
    write_frame(
        answers, json.dumps({"ready": True, "ms": (time.perf_counter() - t0) * 1e3}).encode()
    )
    while (frame := read_frame(requests)) is not None:
        header, frames = _run(json.loads(frame))
        write_frame(answers, json.dumps(header, allow_nan=False).encode())
        for payload in frames:
            write_frame(answers, payload)
    return 0


# ---------------------------------------------------------------- the parent


class Child:
    """One child process and its pipes."""

    def __init__(self, software: bool, gpu: bool) -> None:
        self.software, self.gpu = software, gpu
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gpulab.playground.native_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # a Ctrl+C of the server's terminal is the server's
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: BinaryIO = self.proc.stdin
        self.stdout: BinaryIO = self.proc.stdout
        self.ready = False
        write_frame(self.stdin, json.dumps({"software": software, "gpu": gpu}).encode())

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float) -> None:
        if self.ready:
            return
        answer = self.receive(timeout, "starting")
        if not answer.get("ready"):
            raise GpuLabError("BACKEND", f"the native executor process did not start: {answer}")
        self.ready = True

    def receive(self, timeout: float | None, doing: str) -> dict[str, Any]:
        """The next JSON frame; BACKEND naming a crash or the timeout."""
        payload = self._frame(timeout, doing)
        return json.loads(payload)

    def receive_bytes(self, timeout: float | None, doing: str) -> bytes:
        return self._frame(timeout, doing)

    def _frame(self, timeout: float | None, doing: str) -> bytes:
        """One frame read straight from the pipe's descriptor, each chunk waited for with
        select until the timeout (a buffered reader would hide bytes it already holds from
        select: the output frames that came with the header)."""
        until = None if timeout is None else time.monotonic() + max(0.0, timeout)
        head = self._read(HEADER, until, doing)
        body = None if head is None else self._read(int.from_bytes(head, "big"), until, doing)
        if body is None:
            raise GpuLabError("BACKEND", self.death(doing))
        return body

    def _read(self, n: int, until: float | None, doing: str) -> bytes | None:
        """n bytes, or None when the pipe ends first (the child died)."""
        fd = self.stdout.fileno()
        parts = []
        got = 0
        while got < n:
            if until is not None:
                readable, _, _ = select.select([fd], [], [], max(0.0, until - time.monotonic()))
                if not readable:
                    raise _Timeout(doing)
            try:
                chunk = os.read(fd, min(n - got, 1 << 20))
            except OSError:
                return None
            if not chunk:
                return None
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def death(self, doing: str) -> str:
        """Why the process ended, in words."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        return (
            f"the native executor process {how} while {doing} (a crash in the WGSL compiler "
            "or the driver); a fresh process was started: the server goes on"
        )

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        for stream in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                stream.close()

    def close(self) -> None:
        """Ask the child to end (stdin closed), then make sure."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        with contextlib.suppress(OSError):
            self.stdout.close()


class _Timeout(Exception):
    def __init__(self, doing: str) -> None:
        super().__init__(doing)
        self.doing = doing


class ChildExecutor:
    """The server's executor (`Executor`: graph -> result, as host.execute answers): see the
    module docstring. `deadline_s` is the request's deadline (the server's quotas); the child is
    killed `grace_s` after it. `spare=False` runs without the warm spare (one process).
    `hooks["sent"]`, a threading.Event, is set each time a request has been handed to the child
    (tests wait on it)."""

    def __init__(
        self, deadline_s: float = 30.0, spare: bool = True, grace_s: float = GRACE_S
    ) -> None:
        self.deadline_s = float(deadline_s)
        self.grace_s = float(grace_s)
        self.spare_wanted = spare
        self.hooks: dict[str, Any] = {}
        self.replaced = 0  # children killed or found dead and replaced
        self._lock = threading.Lock()
        self._active: Child | None = None
        self._spare: Child | None = None
        self._closed = False

    # -- what the endpoint calls ----------------------------------------------------------

    def __call__(self, graph: dict) -> dict[str, Any]:
        with self._lock:
            if self._closed:
                raise GpuLabError("DISPOSED", "the native executor was closed")
            child = self._ready_child()
            try:
                return self._ask(child, graph)
            except _Timeout:
                self._replace()
                raise GpuLabError(
                    "BACKEND",
                    f"the graph ran past the server's {self.deadline_s + self.grace_s:g} s deadline; "
                    "its native executor process was killed (a running shader cannot be "
                    "stopped otherwise) and a fresh one answers the next request",
                ) from None
            except GpuLabError as err:
                if err.code == "BACKEND" and "native executor process" in err.message:
                    self._replace()
                raise

    @property
    def active_pid(self) -> int | None:
        """The pid of the process that runs the next graph (tests)."""
        return self._active.pid if self._active else None

    def start(self) -> None:
        """Start the processes now (the server does at start-up: the first request then finds
        a warm one)."""
        with self._lock:
            self._ensure()

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Wait until the active child and the spare have started (their devices open): then
        the next request, and the one after a crash, find a warm process."""
        with self._lock:
            self._ensure()
            for child in (self._active, self._spare):
                if child is not None:
                    try:
                        child.wait_ready(timeout)
                    except _Timeout:
                        raise GpuLabError(
                            "BACKEND", f"the native executor did not start within {timeout:g} s"
                        ) from None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for child in (self._active, self._spare):
                if child is not None:
                    child.close()
            self._active = self._spare = None

    # -- internals --------------------------------------------------------------------------

    @staticmethod
    def _settings() -> tuple[bool, bool]:
        from gpulab import executors

        return executors.software_allowed(), executors.gpu_enabled()

    def _ensure(self) -> None:
        software, gpu = self._settings()
        if self._active is None:
            self._active = Child(software, gpu)
        if self.spare_wanted and self._spare is None:
            self._spare = Child(software, gpu)

    def _ready_child(self) -> Child:
        self._ensure()
        assert self._active is not None
        try:
            self._active.wait_ready(START_TIMEOUT_S)
        except (_Timeout, GpuLabError) as err:
            self._replace()
            doing = err.doing if isinstance(err, _Timeout) else err.message
            raise GpuLabError("BACKEND", f"the native executor did not start ({doing})") from None
        return self._active

    def _ask(self, child: Child, graph: dict) -> dict[str, Any]:
        import numpy as np

        from gpulab.dtypes import DTYPE_NUMPY

        software, gpu = self._settings()
        request = {
            "graph": graph,
            "software": software,
            "gpu": gpu,
            "deadline_s": self.deadline_s,
        }
        try:
            write_frame(child.stdin, json.dumps(request, allow_nan=False).encode())
        except OSError:
            raise GpuLabError("BACKEND", child.death("receiving a graph")) from None
        sent = self.hooks.get("sent")
        if sent is not None:
            sent.set()
        until = time.monotonic() + self.deadline_s + self.grace_s
        header = child.receive(until - time.monotonic(), "running a graph")
        if header.get("lost"):
            self._replace()  # its device passed a deadline: the shader may still be running
        if "error" in header:
            e = header["error"]
            raise GpuLabError(str(e.get("code")), str(e.get("message")), e.get("node"))
        outputs = {}
        for name, shape, dtype in header["outputs"]:
            raw = child.receive_bytes(until - time.monotonic(), "sending results")
            arr = np.frombuffer(raw, dtype=np.dtype(DTYPE_NUMPY[dtype])).reshape(shape)
            outputs[name] = {"shape": shape, "dtype": dtype, "array": arr}
        stats = dict(header.get("stats") or {})
        stats["process"] = "child"
        return {"backend": header["backend"], "outputs": outputs, "stats": stats}

    def _replace(self) -> None:
        """The active child is killed; the spare (warm) takes its place; a new spare starts."""
        if self._active is not None:
            self._active.kill()
        self.replaced += 1
        self._active, self._spare = self._spare, None
        if not self._closed:
            self._ensure()


if __name__ == "__main__":
    sys.exit(child_main())
