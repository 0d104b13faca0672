"""The one exception type of gpulab, with the protocol's error codes (ops.json `error_codes`)."""

from __future__ import annotations

from . import optable

# The codes come from the op table, the one source both languages read.
CODES = tuple(optable.load()["error_codes"])


class GpuLabError(Exception):
    """An error with a protocol code, a message and the id of the node at fault (or None).

    The JS twin (`GpuLabError` in backends-js) carries the same three fields, so an error that
    crosses the Pyodide bridge keeps its code.
    """

    def __init__(self, code: str, message: str, node: int | None = None) -> None:
        if code not in CODES:
            raise ValueError(f"unknown gpulab error code {code!r}; expected one of {CODES}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.node = node

    def to_dict(self) -> dict:
        """The error as plain data (what a result or a bridge message carries)."""
        return {"code": self.code, "message": self.message, "node": self.node}
