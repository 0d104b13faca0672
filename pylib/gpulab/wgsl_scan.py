"""A small WGSL binding scanner: the twin of backends-js/src/wgsl-scan.mjs.

What a student's module declares at module scope (resource variables with @group/@binding,
structs, @compute entry points), read without a compiler so the validator can check the binding
convention before any device work. The patterns are the JS ones character for character
(blankspace spelled out: JS and Python disagree on `\\s` outside ASCII); pylib/tests/
test_wgsl_twins.py compares both scanners on a corpus of sources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

WS = "[\\t\\n\\v\\f\\r \\u0085\\u200e\\u200f\\u2028\\u2029]"
# WGSL's line breaks: each ends a `//` comment (the rewriter of wgsl_budget.py reads the same
# stripped text, so a comment ended by a vertical tab cannot hide a loop from it)
LINE_BREAKS = "\n\v\f\r\u0085\u2028\u2029"
ID = "[A-Za-z_][A-Za-z0-9_]*"
ATTR = f"@{WS}*{ID}(?:{WS}*\\([^()]*\\))?{WS}*"
# Each run of attributes is found once; what follows a run is matched at its end, and a
# declaration's type is read up to the next stop (`;` `=` `@` `{` `}`: a type holds none of
# them) found by a binary search (_Stops), so no pattern rescans the rest of the source (a 1 MiB
# hostile source stays linear: `:([^;=]*);` matched at every `@group(0) var a:` took 126 s for
# 256 KB). The stop `@` also keeps declarations' types apart: n heads before one `;` each read
# only up to the next head, not n copies of the rest of the source.
ATTR_RUN = re.compile(f"(?:{ATTR})+")
VAR_HEAD = re.compile(f"var{WS}*(?:<([^<>]*)>)?{WS}*({ID}){WS}*:")
STOP = re.compile("[;=@{}]")
FN_TAIL = re.compile(f"fn{WS}+({ID})")
STRUCT_DECL = re.compile(f"struct{WS}+({ID}){WS}*\\{{([^{{}}]*)\\}}")
ATTR_ONE = re.compile(f"@{WS}*({ID})(?:{WS}*\\(([^()]*)\\))?")
MEMBER = re.compile(f"^{WS}*(?:{ATTR})*({ID}){WS}*:([\\s\\S]*)$")
BLANK = re.compile(WS)


def strip_comments(source: str) -> str:
    """Comments replaced by spaces, newlines kept (offsets stay the source's); block comments nest."""
    out: list[str] = []
    depth = 0
    line = False
    i = 0
    n = len(source)
    while i < n:
        c = source[i]
        nxt = source[i + 1] if i + 1 < n else ""
        if line:
            if c in LINE_BREAKS:
                line = False
                out.append(c)
            else:
                out.append(" ")
        elif depth > 0:
            if c == "*" and nxt == "/":
                depth -= 1
                out.append("  ")
                i += 1
            elif c == "/" and nxt == "*":
                depth += 1
                out.append("  ")
                i += 1
            else:
                out.append(c if c in "\n\r" else " ")
        elif c == "/" and nxt == "/":
            line = True
            out.append("  ")
            i += 1
        elif c == "/" and nxt == "*":
            depth = 1
            out.append("  ")
            i += 1
        else:
            out.append(c)
        i += 1
    return "".join(out)


class _Stops:
    """The first stop (`;` `=` `@` `{` `}`) at or after a position: every stop's offset found once, then a
    binary search per question (linear over the whole scan, in any order of questions)."""

    def __init__(self, code: str) -> None:
        self.offsets = [m.start() for m in STOP.finditer(code)]
        self.end = len(code)

    def at_or_after(self, pos: int) -> int:
        import bisect

        k = bisect.bisect_left(self.offsets, pos)
        return self.offsets[k] if k < len(self.offsets) else self.end


ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def line_index(text: str) -> Callable[[int], tuple[int, int]]:
    """offset -> (line, column), 1-based, the column in UTF-16 units as the JS twin and the
    page's compiler count (a character past U+FFFF is two): line starts and such characters
    found once, then binary searches."""
    import bisect

    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    astral = [m.start() for m in ASTRAL.finditer(text)]

    def at(offset: int) -> tuple[int, int]:
        k = bisect.bisect_right(starts, offset) - 1
        wide = bisect.bisect_left(astral, offset) - bisect.bisect_left(astral, starts[k])
        return k + 1, offset - starts[k] + 1 + wide

    return at


def _squeeze(s: str) -> str:
    return BLANK.sub("", s)


def _attributes(attrs: str) -> dict[str, str]:
    return {m.group(1): _squeeze(m.group(2) or "") for m in ATTR_ONE.finditer(attrs)}


def _attr_int(arg: str | None) -> int | None:
    m = re.fullmatch("([0-9]+)[iu]?", arg or "")
    return int(m.group(1)) if m else None


def _split_members(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    for i, c in enumerate(body):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts


def _struct_members(body: str) -> list[dict[str, str]]:
    members = []
    for part in _split_members(body):
        if _squeeze(part) == "":
            continue
        m = MEMBER.match(part)
        if m:
            members.append({"name": m.group(1), "type": _squeeze(m.group(2))})
        else:
            members.append({"name": "", "type": _squeeze(part)})
    return members


def scan_wgsl(source: str) -> dict[str, Any]:
    """{vars, structs, computeEntries}: the same fields, in the same order, as scanWgsl in JS."""
    code = strip_comments(source)
    at = line_index(code)
    variables: list[dict[str, Any]] = []
    entries: list[str] = []
    stops = _Stops(code)
    for run in ATTR_RUN.finditer(code):
        attrs = _attributes(run.group(0))
        v = VAR_HEAD.match(code, run.end())
        stop = stops.at_or_after(v.end()) if v else -1
        if v and stop < len(code) and code[stop] == ";":
            space, _, access = _squeeze(v.group(1) or "").partition(",")
            line, column = at(run.start())
            variables.append(
                {
                    "group": _attr_int(attrs["group"]) if "group" in attrs else None,
                    "binding": _attr_int(attrs["binding"]) if "binding" in attrs else None,
                    "space": space,
                    "access": access.split(",")[0] if access else "",
                    "name": v.group(2),
                    "type": _squeeze(code[v.end() : stop]),
                    "line": line,
                    "column": column,
                }
            )
            continue
        f = FN_TAIL.match(code, run.end())
        if f and "compute" in attrs:
            entries.append(f.group(1))
    structs = [
        {"name": m.group(1), "members": _struct_members(m.group(2)), "line": at(m.start())[0]}
        for m in STRUCT_DECL.finditer(code)
    ]
    return {"vars": variables, "structs": structs, "computeEntries": entries}
