"""The loop budget of students' kernels (issue 21): the twin of backends-js/src/wgsl-budget.mjs.

Before compiling, every `loop`, `for` and `while` of the student's source gets its own
function-scope counter, declared just before the loop keyword and checked first thing in the
body; past `max_loop_iterations` (the op table's limits) the loop sets a flag (a storage
binding appended after the student's) and breaks, and the runner fails the run with BACKEND
naming the budget. Why per loop and a function variable (not one private counter per
invocation): a private variable is never uniform, so a break on it would make a later
workgroupBarrier() non-uniform and the tiled matmul would not compile; and lavapipe's own rule
is per loop (65535 iterations per entry), so with the budget below it both adapters give the
budget error where lavapipe alone would silently cut the loop short. Nothing inserted holds a
newline (line numbers stay the student's); `original_column` maps a compiler's column back.
pylib/tests/test_wgsl_twins.py checks both twins rewrite the corpus to the same text.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .wgsl_scan import strip_comments

FLAG = "_gpulab_budget"
# a keyword not inside a longer identifier (any non-ASCII character but blankspace may be part
# of one)
_WORD = "[A-Za-z0-9_]|[^\\x00-\\x7f\\u0085\\u200e\\u200f\\u2028\\u2029]"
KEYWORD = re.compile(
    f"(?<![A-Za-z0-9_])(?<![^\\x00-\\x7f\\u0085\\u200e\\u200f\\u2028\\u2029])(loop|for|while)(?!{_WORD})"
)
# WGSL blankspace, spelled as the scanner does (JS and Python disagree on \s)
BLANK = "\t\n\v\f\r \u0085\u200e\u200f\u2028\u2029"


class Insertion(NamedTuple):
    offset: int  # in the student's source
    text: str


class Budgeted(NamedTuple):
    source: str
    loops: int
    insertions: list[Insertion]


def _skip_blank(code: str, i: int) -> int:
    while i < len(code) and code[i] in BLANK:
        i += 1
    return i


def _match_paren(code: str, i: int) -> int:
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "(":
            depth += 1
        elif code[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _body_brace(code: str, word: str, end: int) -> int:
    """The `{` of the loop's body, or -1 (malformed: left to the compiler)."""
    i = _skip_blank(code, end)
    if word == "for":
        if i >= len(code) or code[i] != "(":
            return -1
        close = _match_paren(code, i)
        if close < 0:
            return -1
        i = _skip_blank(code, close + 1)
    elif word == "while":
        while i < len(code) and code[i] not in "{;}":
            i += 1
    return i if i < len(code) and code[i] == "{" else -1


def budget_loops(source: str, budget: int, flag_binding: int) -> Budgeted:
    """The source with every loop budgeted (unchanged when it has no loop)."""
    code = strip_comments(source)
    insertions: list[Insertion] = []
    loops = 0
    for m in KEYWORD.finditer(code):
        brace = _body_brace(code, m.group(1), m.end())
        if brace < 0:
            continue
        n = f"_gpulab_n{loops}"
        loops += 1
        insertions.append(Insertion(m.start(), f"var {n}: u32 = 0u; "))
        insertions.append(
            Insertion(
                brace + 1,
                f" {n} += 1u; if ({n} > {budget}u) {{ atomicStore(&{FLAG}, 1u); break; }}",
            )
        )
    if not loops:
        return Budgeted(source, 0, insertions)
    insertions.sort(key=lambda ins: ins.offset)
    parts: list[str] = []
    start = 0
    for ins in insertions:
        parts += [source[start : ins.offset], ins.text]
        start = ins.offset
    parts.append(source[start:])
    parts.append(
        f"\n@group(0) @binding({flag_binding}) var<storage, read_write> {FLAG}: atomic<u32>;\n"
    )
    return Budgeted("".join(parts), loops, insertions)


def original_column(source: str, insertions: list[Insertion], line: int, column: int) -> int:
    """A compiler's column on `line` of the budgeted source as the student's: less what was
    inserted before it on that line (inside inserted text: where it was inserted)."""
    start = 0
    for _ in range(line - 1):
        nl = source.find("\n", start)
        if nl < 0:
            return column
        start = nl + 1
    shift = 0
    for ins in insertions:
        col = ins.offset - start + 1
        if ins.offset < start or "\n" in source[start : ins.offset]:
            continue
        if column - shift < col:
            break
        if column - shift < col + len(ins.text):
            return col
        shift += len(ins.text)
    return column - shift
