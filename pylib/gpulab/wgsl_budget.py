"""The loop budget of students' kernels: the twin of backends-js/src/wgsl-budget.mjs.

Before compiling, every `loop`, `for` and `while` of the student's source is counted twice:
`_gpulab_iters` (var<private>) counts the invocation's loop entries and iterations over every
function and past `max_loop_iterations` (B, the op table's limits) only sets the flag (a storage
binding appended after the student's), which the runner reads back: BACKEND naming the budget.
lavapipe's own cap counts every loop header of an invocation (iterations and exits), never more
than this count, so whatever lavapipe would silently cut short has set the flag first. And one
function variable per loop (`_gpulab_nK`, declared at the top of its function) counts its
iterations in this call and past B the loop breaks, so a loop that never ends stops. Breaking on
the private counter instead would make every later workgroupBarrier() non-uniform (a private
variable is never uniform: Tint and naga would refuse the tiled matmul); a function variable
counted in a uniform loop stays uniform, and an `if` that only sets the flag changes no
uniformity. A source with no barrier (nothing that needs uniform control flow) also breaks on
`_gpulab_iters`, so all its loops stop once the invocation passes B. Nothing inserted holds a newline (line numbers stay the student's);
`original_column` maps a compiler's column back. pylib/tests/test_wgsl_twins.py checks both
twins rewrite a corpus to the same text.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .wgsl_scan import strip_comments

FLAG = "_gpulab_budget"
ITERS = "_gpulab_iters"
# a keyword not inside a longer identifier (any non-ASCII character but blankspace may be part
# of one)
_OTHER = "[^\\x00-\\x7f\\u0085\\u200e\\u200f\\u2028\\u2029]"
KEYWORD = re.compile(f"(?<![A-Za-z0-9_])(?<!{_OTHER})(loop|for|while)(?![A-Za-z0-9_]|{_OTHER})")
# What needs uniform control flow in a compute shader: a source naming none of these may also
# break on the invocation's count (then every loop of the invocation stops at the budget)
UNIFORM_NEEDED = re.compile(
    f"(?<![A-Za-z0-9_])(?<!{_OTHER})(?:workgroupBarrier|storageBarrier|textureBarrier"
    "|workgroupUniformLoad|subgroup|quad)"
)
FN = re.compile(f"(?<![A-Za-z0-9_])(?<!{_OTHER})fn(?![A-Za-z0-9_]|{_OTHER})")
# WGSL blankspace, spelled as the scanner does (JS and Python disagree on \s)
BLANK = "\t\n\v\f\r \u0085\u200e\u200f\u2028\u2029"


class Insertion(NamedTuple):
    offset: int  # in the student's source
    text: str
    rank: int = 0  # the order at one offset: declarations, body checks, loop entries


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
    i = _skip_attributes(code, i)
    return i if i < len(code) and code[i] == "{" else -1


_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _skip_attributes(code: str, i: int) -> int:
    """Past the attributes at i (`@name` or `@name(...)`, the body's `@diagnostic(...)`)."""
    while i < len(code) and code[i] == "@":
        j = _skip_blank(code, i + 1)
        start = j
        while j < len(code) and code[j] in _IDENT_CHARS:
            j += 1
        if j == start:
            return i
        k = _skip_blank(code, j)
        if k < len(code) and code[k] == "(":
            close = _match_paren(code, k)
            if close < 0:
                return i
            j = close + 1
        i = _skip_blank(code, j)
    return i


def _statement_start(code: str, at: int) -> int:
    """Where the loop statement at `at` starts: before its attributes (`@diagnostic(...) for`),
    so what is inserted before the statement does not split them from it."""
    start = at
    while True:
        j = start - 1
        while j >= 0 and code[j] in BLANK:
            j -= 1
        if j >= 0 and code[j] == ")":
            depth = 0
            while j >= 0:
                if code[j] == ")":
                    depth += 1
                elif code[j] == "(":
                    depth -= 1
                    if depth == 0:
                        break
                j -= 1
            j -= 1
            while j >= 0 and code[j] in BLANK:
                j -= 1
        end = j
        while j >= 0 and code[j] in _IDENT_CHARS:
            j -= 1
        if j == end:
            return start
        while j >= 0 and code[j] in BLANK:
            j -= 1
        if j < 0 or code[j] != "@":
            return start
        start = j


def _function_bodies(code: str) -> list[tuple[int, int]]:
    """The function bodies: (the offset of `{`, of its matching `}`), in source order."""
    bodies: list[tuple[int, int]] = []
    after = 0
    for m in FN.finditer(code):
        if m.start() < after:
            continue
        i = code.find("(", m.start())
        close = -1 if i < 0 else _match_paren(code, i)
        if close < 0:
            break
        i = close + 1
        while i < len(code) and code[i] not in "{;}":
            i += 1
        if i >= len(code) or code[i] != "{":
            continue
        depth = 0
        j = i
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        bodies.append((i, j))
        after = j
    return bodies


def _flag_if(budget: int) -> str:
    return f"{ITERS} += 1u; if ({ITERS} > {budget}u) {{ atomicStore(&{FLAG}, 1u); }}"


def budget_loops(source: str, budget: int, flag_binding: int) -> Budgeted:
    """The source with every loop budgeted (unchanged when it has no loop in a function)."""
    code = strip_comments(source)
    insertions: list[Insertion] = []
    bodies = _function_bodies(code)
    stop = "" if UNIFORM_NEEDED.search(code) else f" || {ITERS} > {budget}u"
    decls: list[list[str]] = [[] for _ in bodies]
    loops = 0
    f = 0
    for m in KEYWORD.finditer(code):
        at = m.start()
        while f < len(bodies) and bodies[f][1] < at:
            f += 1
        if f == len(bodies) or at < bodies[f][0]:
            continue  # outside a function: the compiler's
        brace = _body_brace(code, m.group(1), m.end())
        if brace < 0:
            continue
        n = f"_gpulab_n{loops}"
        loops += 1
        decls[f].append(f" var {n}: u32 = 0u;")
        insertions.append(Insertion(_statement_start(code, at), f"{_flag_if(budget)} ", 2))
        text = f" {n} += 1u; {_flag_if(budget)} if ({n} > {budget}u{stop}) {{ break; }}"
        insertions.append(Insertion(brace + 1, text, 1))
    if not loops:
        return Budgeted(source, 0, [])
    for (open_at, _), texts in zip(bodies, decls, strict=True):
        if texts:
            insertions.append(Insertion(open_at + 1, "".join(texts), 0))
    insertions.sort(key=lambda ins: (ins.offset, ins.rank))
    parts: list[str] = []
    start = 0
    for ins in insertions:
        parts += [source[start : ins.offset], ins.text]
        start = ins.offset
    parts.append(source[start:])
    parts.append(
        f"\nvar<private> {ITERS}: u32;\n@group(0) @binding({flag_binding}) "
        f"var<storage, read_write> {FLAG}: atomic<u32>;\n"
    )
    return Budgeted("".join(parts), loops, [Insertion(i.offset, i.text) for i in insertions])


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
