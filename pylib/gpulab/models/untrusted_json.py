"""JSON from a file someone else made (a safetensors header, config.json, tokenizer.json): its
nesting is bounded before it is parsed, so a file of `[[[[...` refuses with VALIDATION naming
the file instead of ending in RecursionError (or in a C stack overflow where the interpreter's
recursion limit is larger than its stack, as in Pyodide).

The depth is measured at C speed: string literals are blanked (they may hold brackets), every
byte but brackets is dropped, then each pass deletes the innermost `[]` / `{}` pairs, one level
per pass, at most `max_depth` passes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gpulab.errors import GpuLabError

MAX_DEPTH = 64  # a safetensors header nests 3 levels, a tokenizer.json about 6
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_INNERMOST = re.compile(rb"\[\]|\{\}")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nesting_exceeds(data: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether the JSON text nests deeper than max_depth (an unbalanced text is left to the
    parser, which says what is wrong with it)."""
    brackets = _STRING.sub(b'""', data).translate(None, _NOT_BRACKETS)
    for _ in range(max_depth):
        if not brackets:
            return False
        fewer = _INNERMOST.sub(b"", brackets)
        if fewer == brackets:
            return False
        brackets = fewer
    return bool(_INNERMOST.search(brackets))


def loads(data: bytes | bytearray | memoryview | str, what: str, prefix: str) -> Any:
    """Parse `data` (the file `what`), or VALIDATION "{prefix}: {what} ..." saying why not."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if nesting_exceeds(raw):
        raise GpuLabError("VALIDATION", f"{prefix}: {what} nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise GpuLabError("VALIDATION", f"{prefix}: {what} is not JSON: {err}") from None
