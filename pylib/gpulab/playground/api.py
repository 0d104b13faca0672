"""`POST /api/execute`: a validated graph in, the native result out (for "Compare with native").

Tensor data travel as bytes both ways: an input's `data` may be `{"base64": "<little-endian
values of the node's dtype>"}` (the validator reads it; a plain list of numbers still works),
and every output of the
answer is `{shape, dtype, data: {"base64": ...}}`, encoded once from the result's array (a
plain-list answer would cost a Python float per element and was serialized twice).

Only the server's own page may call it: the Host header must name this server and the Origin
must be this server's (a foreign page gets 403, so no other site can drive the native GPU
through a student's browser, and DNS rebinding is refused by the Host check). Bodies are
bounded (413) and graphs are validated before anything runs (400 with the validator's error).

Hostile input: Content-Length must be a plain decimal number (no sign, no spaces, no
`_`); the body is read with exactly that bound and the handler's socket timeout; a body nested
deeper than the JSON parser can follow is 400 VALIDATION; the answer's size is known from the
validated graph (every output counted, also outputs naming the same node) and refused with
LIMIT before any work past `MAX_ANSWER`; every failure, MemoryError included, gets an answer.
"""

from __future__ import annotations

import array
import base64
import json
import math
import sys
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any

MAX_BODY = 16 * 1024 * 1024
MAX_ANSWER = 64 * 1024 * 1024  # bytes of base64 output data in one answer (docs/protocol.md)
INPUT_ERRORS = {"VALIDATION", "UNSUPPORTED_VERSION", "LIMIT"}

Executor = Callable[[dict], dict]


def json_safe(value: Any) -> Any:
    """Plain JSON data: numpy arrays to lists, non-finite floats to the protocol's strings."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if hasattr(value, "tolist"):  # numpy arrays and scalars, without importing numpy
        return json_safe(value.tolist())
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return str(value)


def error_body(code: str, message: str, node: int | None = None) -> dict:
    return {"code": code, "message": message, "node": node}


def as_error(exc: BaseException) -> dict:
    """The validator's/host's error as JSON ({code, message, node}); anything else is BACKEND."""
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        return error_body(code, str(getattr(exc, "message", exc)), getattr(exc, "node", None))
    return error_body("BACKEND", f"{type(exc).__name__}: {exc}")


def default_executor(graph: dict) -> dict:
    """Run where gpulab.host runs graphs natively (the host validates the graph once, before
    any device work)."""
    from gpulab import host

    return host.execute(graph)


def encode_output(entry: Any) -> dict:
    """{shape, dtype, data: {"base64"}} from an output entry's array (or its data list)."""
    dtype = str(entry.get("dtype", "float32"))
    arr = entry.get("array") if hasattr(entry, "get") else None
    if arr is not None and hasattr(arr, "tobytes"):
        raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
    else:
        from gpulab.dtypes import TYPECODE

        values = array.array(TYPECODE.get(dtype, "f"), entry["data"])
        if sys.byteorder != "little":
            values.byteswap()
        raw = values.tobytes()
    return {
        "shape": list(entry["shape"]),
        "dtype": dtype,
        "data": {"base64": base64.b64encode(raw).decode("ascii")},
    }


def encode_result(result: dict) -> dict:
    """The answer body: outputs as base64, everything else as plain JSON."""
    body = {k: json_safe(v) for k, v in result.items() if k != "outputs"}
    body["outputs"] = {
        str(name): encode_output(entry) for name, entry in (result.get("outputs") or {}).items()
    }
    return body


def answer_bytes(checked: Any) -> tuple[int, int]:
    """(base64 bytes of all outputs, output count) of a checked graph: each output is
    counted, also several naming one node."""
    from gpulab.dtypes import DTYPES
    from gpulab.shapes import element_count

    total = 0
    for out in checked.outputs:
        node = checked.by_id[out.id]
        raw = element_count(node.shape) * DTYPES[node.dtype]["bytes"]
        total += 4 * ((raw + 2) // 3)
    return total, len(checked.outputs)


class ExecuteEndpoint:
    """The route for `POST /api/execute` (a GET, PUT, ... of that path answers 405)."""

    def __init__(
        self,
        allowed_hosts: Iterable[str],
        executor: Executor = default_executor,
        max_answer: int = MAX_ANSWER,
        quotas: Any = None,
    ):
        from gpulab.quotas import Quotas

        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self.executor = executor
        self.max_answer = max_answer
        self.quotas = quotas if quotas is not None else Quotas()  # the server's setting
        self._lock = threading.Lock()  # one native graph at a time: one device, one queue

    def __call__(self, handler: BaseHTTPRequestHandler) -> bool:
        path = handler.path.split("?", 1)[0]
        if path != "/api/execute":
            return False
        if handler.command != "POST":
            self._send(
                handler,
                405,
                error_body(
                    "VALIDATION", f"{handler.command} on /api/execute: use POST with a JSON graph"
                ),
                {"Allow": "POST"},
            )
            return True
        refusal = self._refusal(handler)
        if refusal:
            self._send(handler, 403, error_body("PERMISSION", refusal))
            return True
        body = self._read_body(handler)
        if body is None:
            return True
        try:
            graph = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            self._send(handler, 400, error_body("VALIDATION", f"body is not JSON: {exc}"))
            return True
        except RecursionError:
            self._send(
                handler, 400, error_body("VALIDATION", "body is nested too deeply to be a graph")
            )
            return True
        self._execute(handler, graph)
        return True

    def _refusal(self, handler: BaseHTTPRequestHandler) -> str | None:
        """Why this request is not from our own page, or None when it is."""
        host = (handler.headers.get("Host") or "").lower()
        if host not in self.allowed_hosts:
            return f"Host {host!r} is not this server"
        origin = handler.headers.get("Origin")
        if origin is None:
            return "missing Origin header: only the playground page may call /api/execute"
        if origin.lower() not in {f"http://{h}" for h in self.allowed_hosts}:
            return f"cross-site request from Origin {origin!r} refused"
        return None

    def _read_body(self, handler: BaseHTTPRequestHandler) -> bytes | None:
        text = handler.headers.get("Content-Length")
        if text is None:
            self._send(handler, 411, error_body("VALIDATION", "Content-Length required"))
            return None
        if not (text.isascii() and text.isdecimal()):  # int() takes '-1', '+5', ' 5', '1_0'
            handler.close_connection = True
            self._send(
                handler,
                400,
                error_body(
                    "VALIDATION", f"Content-Length must be a decimal number of bytes, got {text!r}"
                ),
            )
            return None
        length = int(text)
        if length > MAX_BODY:
            msg = f"request body of {length} bytes exceeds the {MAX_BODY}-byte limit"
            handler.close_connection = True
            self._send(handler, 413, error_body("LIMIT", msg))
            return None
        try:
            body = handler.rfile.read(length)  # at most `length` bytes, within the timeout
        except OSError:  # the client stalled past the handler's timeout
            handler.close_connection = True
            return None
        return body

    def _execute(self, handler: BaseHTTPRequestHandler, graph: Any) -> None:
        from gpulab.cpu.deadline import deadline

        try:
            self._check_answer_size(graph)
            with self._lock, deadline(self.quotas.deadline_s):  # cpu-python stops past it
                result = self.executor(graph)
            body = encode_result(result)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error JSON
            err = as_error(exc)
            del exc  # a MemoryError's traceback holds the frames (and their big arrays)
            self._send(handler, 400 if err["code"] in INPUT_ERRORS else 500, err)
            return
        self._send(handler, 200, body)

    def _check_answer_size(self, graph: Any) -> None:
        """Before any work: the graph is valid, within the quotas, its answer within bounds."""
        from gpulab.errors import GpuLabError
        from gpulab.protocol import validate

        checked = validate(graph)
        self.quotas.check(checked, "/api/execute")
        size, count = answer_bytes(checked)
        if size > self.max_answer:
            raise GpuLabError(
                "LIMIT",
                f"the answer's {count} outputs would take {size} bytes "
                f"of base64 data > the server's answer limit of "
                f"{self.max_answer} bytes (MAX_ANSWER)",
            )

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        body: dict,
        headers: dict[str, str] | None = None,
    ) -> None:
        try:
            data = json.dumps(body, allow_nan=False).encode()
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            status, data = (
                500,
                json.dumps(
                    error_body("BACKEND", f"the answer could not be encoded: {type(exc).__name__}")
                ).encode(),
            )
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(data)
