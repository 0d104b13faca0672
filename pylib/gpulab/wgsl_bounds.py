"""Bounds a student's WGSL source keeps before any compiler sees it: the twin of
backends-js/src/wgsl-bounds.mjs (pylib/tests/test_wgsl_bounds.py compares both on a corpus and
on hypothesis' hostile sources).

naga recurses once per level of nesting and takes the whole process down past a few thousand
levels, and lavapipe crashes on a big array in a function or in `var<private>` (measured here
with wgpu-native: 5000 nested parentheses, 5000 nested calls, 5000 nested `array<>` types, a
20,000-term sum, 20,000 `else if` arms or a 20,000-long `.xyzw` chain each crashed
`create_shader_module`; 1000 of each compiled). Tint, in the page, refuses such sources with its
own limits; these are the same kind of limits (the WGSL spec's and Tint's numbers), checked the
same way in both validators, so a source means the same on every lane:

- parentheses and brackets nest at most `max_wgsl_expression_depth` (127) deep;
- blocks at most `max_wgsl_block_depth` (127), each `else if` arm counting one more;
- type templates (`array<vec4<f32>, 4>`) at most `max_wgsl_type_depth` (15);
- an expression chains at most `max_wgsl_expression_operators` (512) operator characters along
  its nesting (operands separated by commas are siblings, not a chain);
- a fixed-size array has at most `max_wgsl_array_elements` (65535) elements, and the arrays and
  structures of `var<private>` (8192 bytes), `var<workgroup>` (16384) and each function (8192,
  every array or structure type written in it counted) stay within `max_wgsl_private_bytes`,
  `max_wgsl_workgroup_bytes` and `max_wgsl_function_bytes`; an array count there must be an
  integer constant expression of literals and const/override values;
- identifiers starting `_gpulab_` are reserved (the loop budget's counters);
- the kernel's work, workgroups x workgroup size x (the loop budget when it has a loop), is at
  most `max_kernel_work` (2^36).

One pass over the tokens (linear in the source, no recursion on its nesting) checks the first
four and collects the module's declarations; sizes are then computed from those (recursion
bounded: templates by the type depth, named types and consts by NAMED_DEPTH).
"""

from __future__ import annotations

import math
import re
from array import array
from dataclasses import dataclass, field
from typing import Any

from . import optable
from .wgsl_scan import strip_comments

_BLANK = "\\t\\n\\v\\f\\r \\u0085\\u200e\\u200f\\u2028\\u2029"
_OTHER = "[^\\x00-\\x7f\\u0085\\u200e\\u200f\\u2028\\u2029]"  # may be part of an identifier
_NUM_TAIL = "(?:[eEpP][+-]|[0-9A-Za-z_.])*"
TOKEN = re.compile(
    f"[{_BLANK}]+"
    f"|((?:[A-Za-z_]|{_OTHER})(?:[A-Za-z0-9_]|{_OTHER})*)"
    f"|([0-9]{_NUM_TAIL}|\\.[0-9]{_NUM_TAIL})"
    "|([\\s\\S])"
)
ID, NUM, OP = 1, 2, 3
OPERATORS = frozenset("+-*/%&|^!~=<>.[")
GENERATORS = frozenset(
    [
        *("array", "atomic", "ptr", "bitcast", "binding_array", "var"),
        *(f"vec{n}" for n in "234"),
        *(f"mat{c}x{r}" for c in "234" for r in "234"),
    ]
)
DECLARATIONS = frozenset(["const", "override", "alias", "struct", "var", "fn"])
LOOPS = frozenset(["loop", "for", "while"])
RESERVED = "_gpulab_"
NAMED_DEPTH = 8  # named types (alias, struct) and consts referring to others, at most this deep
SATURATE = 2**40  # byte sizes saturate here (both twins count exactly below it)
EXACT = 2**53  # const values from it on are not evaluated (JS numbers are exact below)
INVOCATIONS_PER_GROUP = 256  # WebGPU's maxComputeInvocationsPerWorkgroup, which both lanes keep


class Refusal(Exception):
    """A bound the source passes: code (LIMIT or VALIDATION), the offending offset, detail."""

    def __init__(self, code: str, offset: int, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.offset = offset
        self.detail = detail


def _lim(name: str) -> int:
    return int(optable.limits()[name])


class Tokens:
    """The source's tokens as three compact arrays (kind, start, end): 1 MiB of single-character
    tokens stays a few megabytes."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.kind = bytearray()
        self.start = array("q")
        self.end = array("q")
        for m in TOKEN.finditer(code):
            kind = m.lastindex
            if kind is None:
                continue  # blankspace
            self.kind.append(kind)
            self.start.append(m.start())
            self.end.append(m.end())

    def __len__(self) -> int:
        return len(self.kind)

    def text(self, i: int) -> str:
        return self.code[self.start[i] : self.end[i]] if 0 <= i < len(self.kind) else ""

    def is_op(self, i: int, chars: str) -> bool:
        return 0 <= i < len(self.kind) and self.kind[i] == OP and self.code[self.start[i]] in chars

    def is_id(self, i: int, name: str | None = None) -> bool:
        return (
            0 <= i < len(self.kind)
            and self.kind[i] == ID
            and (name is None or self.text(i) == name)
        )

    def offset(self, i: int) -> int:
        return self.start[i] if i < len(self.kind) else len(self.code)


@dataclass
class Declaration:
    keyword: str
    first: int  # token of the keyword
    last: int = -1  # token that ends it (`;` or the closing `}`)


@dataclass
class Module:
    """What the one pass collects."""

    declarations: list[Declaration] = field(default_factory=list)
    consts: list[Declaration] = field(default_factory=list)  # const/override, any scope
    main_sizes: tuple[int, int] | None = None  # tokens inside main's @workgroup_size( )
    main_at: int = 0  # the `fn` of main, for messages
    loops: bool = False


# ---------------------------------------------------------------- the pass over the tokens


class _Pass:
    """Nesting, chains, type templates and reserved names, checked token by token; module-scope
    declarations collected on the way."""

    def __init__(self, toks: Tokens) -> None:
        self.t = toks
        self.max_expr = _lim("max_wgsl_expression_depth")
        self.max_block = _lim("max_wgsl_block_depth")
        self.max_type = _lim("max_wgsl_type_depth")
        self.max_ops = _lim("max_wgsl_expression_operators")
        self.levels: list[tuple[str, int]] = []  # open ( [ < with the enclosing chain count
        self.current = 0  # operators of the chain at the innermost level
        self.total = 0  # operators along the open levels and the current chain
        self.parens = 0  # open ( and [
        self.templates = 0  # open template lists
        self.brace = 0
        self.chain = [0] * (self.max_block + 2)  # else-if arms per block depth
        self.chain_total = 0
        self.after_close = False
        self.module = Module()
        self.open: Declaration | None = None
        self.const_open: Declaration | None = None
        self.pending_sizes: tuple[int, int] | None = None
        self.sizes_open = -1  # token after `@workgroup_size(` while its list is open

    def run(self) -> Module:
        t = self.t
        for i in range(len(t)):
            self._token(i, t.kind[i], t.code[t.start[i]] if t.kind[i] == OP else "")
        return self.module

    def _refuse(self, i: int, detail: str, code: str = "LIMIT") -> Refusal:
        return Refusal(code, self.t.offset(i), detail)

    def _token(self, i: int, kind: int, op: str) -> None:
        if self.after_close:
            self.after_close = False
            if not self.t.is_id(i, "else"):
                self.chain_total -= self.chain[self.brace]
                self.chain[self.brace] = 0
        if kind == ID:
            self._identifier(i)
        elif kind == OP:
            self._operator(i, op)

    def _identifier(self, i: int) -> None:
        t = self.t
        name = t.text(i)
        if name.startswith(RESERVED):
            raise self._refuse(
                i,
                f"identifiers starting with {RESERVED} are reserved for the loop budget: {name}",
                "VALIDATION",
            )
        if name == "else" and t.is_id(i + 1, "if"):
            self.chain[self.brace] += 1
            self.chain_total += 1
        if name in ("const", "override") and self.parens == 0 and self.const_open is None:
            self.const_open = Declaration(name, i)
            self.module.consts.append(self.const_open)
        if name in LOOPS and self.open is not None and self.open.keyword == "fn" and self.brace:
            self.module.loops = True
        if self.brace == 0 and self.parens == 0 and self.open is None and name in DECLARATIONS:
            self.open = Declaration(name, i)
            self.module.declarations.append(self.open)
            if name == "fn" and t.is_id(i + 1, "main") and self.module.main_sizes is None:
                self.module.main_sizes = self.pending_sizes or (0, 0)
                self.module.main_at = i
        at_brace_0 = self.brace == 0 and t.is_op(i - 1, "@") and t.is_op(i + 1, "(")
        if name == "workgroup_size" and at_brace_0:
            self.sizes_open = i + 2

    def _operator(self, i: int, c: str) -> None:
        if c in "([":
            if c == "[":
                self._count(i)
            self._push(c)
            if self.parens > self.max_expr:
                raise self._refuse(
                    i,
                    "parentheses and brackets (grouping, calls, indexing) nest more than "
                    f"{self.max_expr} deep (max_wgsl_expression_depth)",
                )
        elif c == "<" and self.t.is_id(i - 1) and self.t.text(i - 1) in GENERATORS:
            self._push("<")
            if self.templates > self.max_type:
                raise self._refuse(
                    i, f"type templates nest more than {self.max_type} deep (max_wgsl_type_depth)"
                )
        elif c in ")]":
            while self.levels and self.levels[-1][0] == "<":
                self._pop()
            if self.levels:
                self._pop()
            if c == ")" and self.parens == 0 and self.sizes_open >= 0:
                self.pending_sizes = (self.sizes_open, i)
                self.sizes_open = -1
        elif c == ">" and self.levels and self.levels[-1][0] == "<":
            self._pop()
        elif c == ",":
            self.total -= self.current
            self.current = 0
        elif c in ";{}":
            self._statement_end(i, c)
        elif c in OPERATORS:
            self._count(i)

    def _count(self, i: int) -> None:
        self.current += 1
        self.total += 1
        if self.total > self.max_ops:
            raise self._refuse(
                i,
                f"an expression chains more than {self.max_ops} operators "
                "(max_wgsl_expression_operators): split it with let",
            )

    def _push(self, kind: str) -> None:
        self.levels.append((kind, self.current))
        self.current = 0
        if kind == "<":
            self.templates += 1
        else:
            self.parens += 1

    def _pop(self) -> None:
        kind, outer = self.levels.pop()
        self.total -= self.current
        self.current = outer
        if kind == "<":
            self.templates -= 1
        else:
            self.parens -= 1

    def _statement_end(self, i: int, c: str) -> None:
        if self.const_open is not None:
            self.const_open.last = i
            self.const_open = None
        self.levels.clear()
        self.current = self.total = self.parens = self.templates = 0
        if c == "{":
            self.brace += 1
            if self.brace + self.chain_total > self.max_block:
                raise self._refuse(
                    i,
                    f"blocks nest more than {self.max_block} deep, each else-if arm counting "
                    "one (max_wgsl_block_depth)",
                )
        elif c == "}" and self.brace > 0:
            self.chain_total -= self.chain[self.brace]
            self.chain[self.brace] = 0
            self.brace -= 1
            self.after_close = True
            if self.brace == 0 and self.open is not None and self.open.keyword in ("fn", "struct"):
                self._close(i)
        if self.brace == 0 and c == ";" and self.open is not None:
            self._close(i)

    def _close(self, i: int) -> None:
        assert self.open is not None
        self.open.last = i
        self.open = None
        self.pending_sizes = None
        self.sizes_open = -1


# ---------------------------------------------------------------- constants and sizes


class _Unknown(Exception):
    """A constant expression the checker cannot evaluate."""


def _int_literal(text: str) -> int | None:
    m = re.fullmatch("(0[xX][0-9a-fA-F]+|[0-9]+)[iu]?", text)
    if not m:
        return None
    return int(m.group(1), 16) if m.group(1)[:2].lower() == "0x" else int(m.group(1))


def _exact(v: int) -> int:
    if abs(v) >= EXACT:
        raise _Unknown
    return v


def _trunc_div(a: int, b: int) -> int:
    if b == 0:
        raise _Unknown
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _apply(op: str, a: int, b: int) -> int:
    if op == "+":
        return _exact(a + b)
    if op == "-":
        return _exact(a - b)
    if op == "*":
        return _exact(a * b)
    if op == "/":
        return _trunc_div(a, b)
    if op == "%":
        return a - b * _trunc_div(a, b)
    if op in ("<<", ">>"):
        if not 0 <= b <= 31:
            raise _Unknown
        return _exact(a * 2**b) if op == "<<" else a // 2**b
    raise _Unknown


PRECEDENCE = {"<<": 1, ">>": 1, "+": 2, "-": 2, "*": 3, "/": 3, "%": 3}


class _Sizes:
    """Byte sizes of types and values of constants, from the collected declarations."""

    def __init__(self, toks: Tokens, module: Module) -> None:
        self.t = toks
        self.consts: dict[str, tuple[int, int]] = {}
        self.aliases: dict[str, int] = {}
        self.structs: dict[str, tuple[int, int]] = {}
        self.values: dict[str, int | None] = {}
        self.named: dict[str, tuple[int, int] | None] = {}
        self.max_elements = _lim("max_wgsl_array_elements")
        # consts of every scope by name; a name declared twice (a function's const shadowing
        # a module's) is ambiguous to a checker without scopes: unknown
        ambiguous: set[str] = set()
        for d in module.consts:
            name_at = d.first + 1
            end = d.last if d.last >= 0 else len(toks)
            eq = self._find(name_at, end, "=")
            if not toks.is_id(name_at) or eq < 0:
                continue
            name = toks.text(name_at)
            if name in self.consts:
                ambiguous.add(name)
            self.consts[name] = (eq + 1, end)
        for name in ambiguous:
            del self.consts[name]
        for d in module.declarations:
            name_at = d.first + 1
            if not toks.is_id(name_at):
                continue
            name = toks.text(name_at)
            end = d.last if d.last >= 0 else len(toks)
            if d.keyword == "alias" and toks.is_op(name_at + 1, "="):
                self.aliases.setdefault(name, name_at + 2)
            elif d.keyword == "struct" and toks.is_op(name_at + 1, "{"):
                self.structs.setdefault(name, (name_at + 2, end))

    def _find(self, i: int, end: int, char: str) -> int:
        """The first operator `char` in tokens [i, end), or -1."""
        for j in range(i, end):
            if self.t.is_op(j, char):
                return j
        return -1

    # -- constant expressions (integers: shunting-yard, no recursion on parentheses) --------

    def value(self, first: int, last: int, depth: int = 0) -> int:
        """The integer value of tokens [first, last), or _Unknown."""
        t = self.t
        out: list[int] = []
        ops: list[str] = []
        expect_operand = True
        i = first
        while i < last:
            kind = t.kind[i]
            text = t.text(i)
            if kind == NUM and expect_operand:
                v = _int_literal(text)
                if v is None:
                    raise _Unknown
                out.append(_exact(v))
                expect_operand = False
            elif kind == ID and expect_operand and text in ("i32", "u32") and t.is_op(i + 1, "("):
                pass  # a conversion of an integer: the value itself
            elif kind == ID and expect_operand and not t.is_op(i + 1, "("):
                out.append(self._named_value(text, depth))
                expect_operand = False
            elif t.is_op(i, "(") and expect_operand:
                ops.append("(")
            elif t.is_op(i, ")") and not expect_operand:
                while ops and ops[-1] != "(":
                    self._reduce(out, ops.pop())
                if not ops:
                    raise _Unknown
                ops.pop()
            elif t.is_op(i, "-") and expect_operand:
                ops.append("neg")
            elif kind == OP and not expect_operand:
                op = text
                if text in "<>" and t.is_op(i + 1, text):
                    op, i = text * 2, i + 1
                if op not in PRECEDENCE:
                    raise _Unknown
                while (
                    ops
                    and ops[-1] != "("
                    and (ops[-1] == "neg" or PRECEDENCE[ops[-1]] >= PRECEDENCE[op])
                ):
                    self._reduce(out, ops.pop())
                ops.append(op)
                expect_operand = True
            else:
                raise _Unknown
            i += 1
        if expect_operand:
            raise _Unknown
        while ops:
            op = ops.pop()
            if op == "(":
                raise _Unknown
            self._reduce(out, op)
        if len(out) != 1:
            raise _Unknown
        return out[0]

    @staticmethod
    def _reduce(out: list[int], op: str) -> None:
        if op == "neg":
            if not out:
                raise _Unknown
            out.append(-out.pop())
            return
        if len(out) < 2:
            raise _Unknown
        b = out.pop()
        a = out.pop()
        out.append(_apply(op, a, b))

    def _named_value(self, name: str, depth: int) -> int:
        if name in self.values:
            found = self.values[name]
            if found is None:
                raise _Unknown
            return found
        where = self.consts.get(name)
        if where is None or depth >= NAMED_DEPTH:
            raise _Unknown
        self.values[name] = None  # a cycle evaluates to unknown
        found = self.value(*where, depth + 1)
        self.values[name] = found
        return found

    # -- types ---------------------------------------------------------------------------

    def type_at(self, i: int, depth: int = 0) -> tuple[int, int, int]:
        """(size, align, the token after the type) of the type written at token i."""
        t = self.t
        name = t.text(i)
        templated = t.is_op(i + 1, "<")
        if name == "array" and templated:
            return self._array(i, depth)
        if name in ("f32", "i32", "u32", "bool"):
            return 4, 4, i + 1
        if name == "f16":
            return 2, 2, i + 1
        m = re.fullmatch("vec([234])([fiuh]?)|mat([234])x([234])([fh]?)", name)
        if m:
            return self._vector_or_matrix(i, m, templated, depth)
        if name == "atomic" and templated:
            return 4, 4, self._template_end(i + 1)
        if t.is_id(i) and (name in self.aliases or name in self.structs):
            size, align = self._named(i, name, depth)
            return size, align, i + 1
        after = self._template_end(i + 1) if templated else i + 1
        return 0, 1, after  # a handle, a pointer or an unknown name: the compiler's

    def _array(self, i: int, depth: int) -> tuple[int, int, int]:
        t = self.t
        size, align, j = self.type_at(i + 2, depth)
        if not t.is_op(j, ","):
            return 0, align, self._template_end(i + 1)  # runtime-sized (storage only)
        end = self._template_end(i + 1)
        last = end - 1
        if t.is_op(last - 1, ","):
            last -= 1  # a trailing comma
        try:
            count = self.value(j + 1, last)
        except _Unknown:
            raise Refusal(
                "VALIDATION",
                t.offset(j + 1),
                f"the array count `{t.code[t.offset(j + 1) : t.offset(last)].strip()}` is not "
                "an integer constant of literals and const or override values: the size of a "
                "private, workgroup or function array must be known before compiling",
            ) from None
        if count > self.max_elements:
            raise Refusal(
                "LIMIT",
                t.offset(i),
                f"an array of {count} elements is more than max_wgsl_array_elements "
                f"{self.max_elements}",
            )
        stride = -(-size // align) * align
        return min(max(count, 0) * stride, SATURATE), align, end

    def _vector_or_matrix(
        self, i: int, m: re.Match[str], templated: bool, depth: int
    ) -> tuple[int, int, int]:
        suffix = m.group(2) if m.group(1) else m.group(5)
        after = i + 1
        scalar = 2 if suffix == "h" else 4
        if templated and not suffix:
            scalar, _, _ = self.type_at(i + 2, depth)
            after = self._template_end(i + 1)
        rows = int(m.group(1) or m.group(4))
        align = scalar * (2 if rows == 2 else 4)
        size = scalar * rows
        if m.group(1):
            return size, align, after
        columns = int(m.group(3))
        return columns * (-(-size // align) * align), align, after

    def _template_end(self, i: int) -> int:
        """The token after the `>` closing the template list opened at token i (`<`)."""
        t = self.t
        depth = 0
        j = i
        while j < len(t):
            if t.is_op(j, "<") and (j == i or (t.is_id(j - 1) and t.text(j - 1) in GENERATORS)):
                depth += 1
            elif t.is_op(j, ">"):
                depth -= 1
                if depth == 0:
                    return j + 1
            elif t.is_op(j, ";{}"):
                return j
            j += 1
        return j

    def _named(self, i: int, name: str, depth: int) -> tuple[int, int]:
        if name in self.named:
            return self.named[name] or (0, 1)
        if depth >= NAMED_DEPTH:
            raise Refusal(
                "LIMIT",
                self.t.offset(i),
                f"type {name} refers through more than {NAMED_DEPTH} named types",
            )
        self.named[name] = None  # a cycle is the compiler's to refuse
        if name in self.aliases:
            size, align, _ = self.type_at(self.aliases[name], depth + 1)
        else:
            size, align = self._struct(*self.structs[name], depth + 1)
        self.named[name] = (size, align)
        return size, align

    def _struct(self, first: int, last: int, depth: int) -> tuple[int, int]:
        """WGSL's layout: each member at its alignment (@align), of its size (@size)."""
        t = self.t
        offset, struct_align = 0, 1
        i = first
        while i < last:
            size_attr = align_attr = None
            while t.is_op(i, "@") and t.is_id(i + 1):
                attr = t.text(i + 1)
                i += 2
                if t.is_op(i, "("):
                    close = self._close_paren(i, last)
                    if attr in ("size", "align"):
                        try:
                            value = self.value(i + 1, close)
                        except _Unknown:
                            value = None
                        if attr == "size":
                            size_attr = value
                        else:
                            align_attr = value
                    i = close + 1
            if not (t.is_id(i) and t.is_op(i + 1, ":")):
                i = self._next_member(i, last)
                continue
            size, align, i = self.type_at(i + 2, depth)
            align = max(1, min(align_attr or align, SATURATE))
            size = min(max(size_attr if size_attr is not None else size, 0), SATURATE)
            offset = min(-(-offset // align) * align + size, SATURATE)
            struct_align = max(struct_align, align)
            i = self._next_member(i, last)
        return min(-(-offset // struct_align) * struct_align, SATURATE), struct_align

    def _close_paren(self, i: int, last: int) -> int:
        depth = 0
        for j in range(i, last):
            if self.t.is_op(j, "("):
                depth += 1
            elif self.t.is_op(j, ")"):
                depth -= 1
                if depth == 0:
                    return j
        return last

    def _next_member(self, i: int, last: int) -> int:
        """The token after the `,` ending the member at i (template lists and parentheses
        skipped), or last."""
        t = self.t
        depth = 0
        while i < last:
            if t.is_op(i, "(") or (t.is_op(i, "<") and t.is_id(i - 1)):
                depth += 1
            elif t.is_op(i, ")>"):
                depth = max(0, depth - 1)
            elif t.is_op(i, ",") and depth == 0:
                return i + 1
            i += 1
        return last


# ---------------------------------------------------------------- the checks


def _sized_positions(t: Tokens, first: int, last: int, sizes: _Sizes) -> list[int]:
    """Tokens in [first, last) where an array or a named structure type is written."""
    out = []
    for i in range(first, last):
        if t.kind[i] != ID:
            continue
        name = t.text(i)
        if (
            (name == "array" and t.is_op(i + 1, "<"))
            or name in sizes.structs
            or (name in sizes.aliases)
        ):
            out.append(i)
    return out


def _memory(t: Tokens, module: Module, sizes: _Sizes) -> None:
    """Element counts and the private, workgroup and function totals, in source order."""
    totals = {"private": 0, "workgroup": 0}
    limits = {
        "private": ("max_wgsl_private_bytes", _lim("max_wgsl_private_bytes")),
        "workgroup": ("max_wgsl_workgroup_bytes", _lim("max_wgsl_workgroup_bytes")),
    }
    fn_name, fn_most = "max_wgsl_function_bytes", _lim("max_wgsl_function_bytes")
    for d in module.declarations:
        last = d.last if d.last >= 0 else len(t)
        if d.keyword == "var":
            space = "private"
            if t.is_op(d.first + 1, "<"):
                space = t.text(d.first + 2)
            if space not in totals:
                continue
            at = _var_type(t, d.first, last)
            if at < 0:
                continue
            size, _, _ = sizes.type_at(at)
            totals[space] = min(totals[space] + size, SATURATE)
            name, most = limits[space]
            if totals[space] > most:
                raise Refusal(
                    "LIMIT",
                    t.offset(d.first),
                    f"var<{space}> variables take {_bytes(totals[space])} bytes, more than "
                    f"{name} {most}",
                )
        elif d.keyword == "fn":
            total = 0
            label = t.text(d.first + 1) or "?"
            i_positions = _sized_positions(t, d.first, last, sizes)
            skip_to = -1
            for i in i_positions:
                if i < skip_to:
                    continue  # inside a type already counted
                size, _, skip_to = sizes.type_at(i)
                total = min(total + size, SATURATE)
                if total > fn_most:
                    raise Refusal(
                        "LIMIT",
                        t.offset(i),
                        f"function {label} holds {_bytes(total)} bytes of arrays and "
                        f"structures, more than {fn_name} {fn_most}",
                    )


def _var_type(t: Tokens, first: int, last: int) -> int:
    """The token where a module-scope var's type is written: after its `:`, else the
    initializer's constructor after `=` (-1: neither)."""
    for j in range(first + 1, last):
        if t.is_op(j, ":"):
            return j + 1
        if t.is_op(j, "="):
            return j + 1 if t.is_id(j + 1) else -1
    return -1


def _bytes(n: int) -> str:
    return str(n) if n < SATURATE else f"more than {SATURATE}"


def _work(t: Tokens, module: Module, sizes: _Sizes, workgroups: list[int]) -> None:
    """Workgroups x workgroup size x (the loop budget when there is a loop) within
    max_kernel_work; a workgroup size the checker cannot evaluate counts as the device's
    most (INVOCATIONS_PER_GROUP)."""
    per_group = INVOCATIONS_PER_GROUP
    if module.main_sizes and module.main_sizes[1] > module.main_sizes[0]:
        first, last = module.main_sizes
        parts, start, depth = [], first, 0
        for j in range(first, last):
            if t.is_op(j, "("):
                depth += 1
            elif t.is_op(j, ")"):
                depth -= 1
            elif t.is_op(j, ",") and depth == 0:
                parts.append((start, j))
                start = j + 1
        if start < last:
            parts.append((start, last))
        try:
            values = [sizes.value(a, b) for a, b in parts]
            if values and all(v >= 1 for v in values):
                per_group = math.prod(values)
        except _Unknown:
            pass
    budget = _lim("max_loop_iterations")
    loops = budget if module.loops else 1
    groups = math.prod(workgroups)
    work = groups * per_group * loops
    most = _lim("max_kernel_work")
    if work > most:
        shown = " x ".join(str(w) for w in workgroups)
        loop_text = f" x {budget} loop iterations (the loop budget)" if module.loops else ""
        raise Refusal(
            "LIMIT",
            t.offset(module.main_at),
            f"the kernel's work is {shown} workgroups x {per_group} invocations{loop_text} "
            f"= {work}, more than max_kernel_work {most}",
        )


def check_bounds(source: str, workgroups: list[int]) -> Refusal | None:
    """The first bound the source passes (with its offset in the source), or None."""
    toks = Tokens(strip_comments(source))
    try:
        module = _Pass(toks).run()
        sizes = _Sizes(toks, module)
        _memory(toks, module, sizes)
        _work(toks, module, sizes, workgroups)
    except Refusal as refusal:
        return refusal
    return None


def utf16_column(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of an offset, the column in UTF-16 units (as the JS twin and
    the page's compiler count)."""
    line_start = text.rfind("\n", 0, offset) + 1
    line = text.count("\n", 0, offset) + 1
    column = len(text[line_start:offset].encode("utf-16-le", "surrogatepass")) // 2 + 1
    return line, column


def refusal_message(source: str, refusal: Refusal) -> tuple[str, dict[str, Any]]:
    """(the message after the node label, the location) for a refusal."""
    line, column = utf16_column(source, refusal.offset)
    kind = "WGSL limit" if refusal.code == "LIMIT" else "WGSL error"
    return f"{kind} at line {line}, column {column}: {refusal.detail}", {
        "line": line,
        "column": column,
    }
