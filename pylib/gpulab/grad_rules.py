"""The vector-Jacobian rule of each differentiable op, selected by its op-table row's `grad`.

A rule takes (node, dy, wanted): the node (NodeView: operands by name, attrs with defaults,
its result `out`), the gradient of its result, and the operand names a gradient
is needed for; it returns {operand name: gradient of that operand's shape}. Rules build protocol
ops only (Tensor methods, Graph.op / where / full), so gradients run on every backend.

Where torch has a rule, the formula (and its order of float operations, where it is cheap) is
torch's (tools/autograd/derivatives.yaml), so float32 results agree to rounding:
- relu: dy where x > 0, else 0 (0 at x = 0); abs: dy * sign(x) (0 at 0).
- clamp: dy where min <= x <= max (a value on a bound passes), else 0.
- maximum / minimum: at a tie each operand gets dy / 2, otherwise the selected one gets dy.
- reduce_max / reduce_min: dy shared evenly among the elements equal to the result (torch's
  amax / amin and its full max() / min(); torch's max(dim) instead sends all of it to the one
  index it returns: a frontend wanting that writes gather(argmax)).
- dropout: dropout of dy with the same p, seed and counter (the same mask and 1 / (1 - p)).
- positive (a > 0 ? 1 : 0, a step): gradient 0 everywhere (as torch's sign).
- index_select / gather: index_add / scatter_add of dy into zeros (the protocol's ascending
  order, so repeated indices add the same way on every backend).
- cross_entropy (soft targets b): d/da = dy * (softmax(a) * rowsum(b) - b) / N, d/db =
  -dy * log_softmax(a) / N (torch's, for probability targets of any row sum).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from . import optable
from .errors import GpuLabError
from .protocol import label

# gpulab.graph.Graph / Tensor: not imported, because graph.py imports gpulab.autograd (for
# Graph.grad), which imports this module, and the layers may not form a cycle
# (pylib/tests/test_layers.py). Rules only call Tensor methods and Graph.op / where / full.
Tensor = Any
Graph = Any


class NodeView:
    """One recorded node as a rule sees it: its operands as Tensors by their op-table names
    (a variadic list as `tensors[0]`, `tensors[1]`, ...), its attributes with the table's
    defaults filled in, and its own result `out`."""

    __slots__ = ("attrs", "graph", "id", "op", "operands", "out")

    def __init__(self, graph: Graph, node: dict[str, Any]) -> None:
        row = optable.ops()[node["op"]]
        ids = operand_ids(node)
        names = optable.operand_names(row, len(ids))
        self.graph = graph
        self.id: int = node["id"]
        self.op: str = node["op"]
        self.operands: dict[str, Tensor] = {n: graph._tensors[i] for n, i in zip(names, ids)}
        self.attrs: dict[str, Any] = {
            k: node.get(k, spec.get("default")) for k, spec in row["attrs"].items()
        }
        self.out: Tensor = graph._tensors[self.id]

    def __getitem__(self, name: str) -> Tensor:
        return self.operands[name]

    def __repr__(self) -> str:
        return f"NodeView({label(self.id, self.op)})"


def operand_ids(node: dict[str, Any]) -> list[int]:
    """The node's operand ids in op-table order (the variadic list first)."""
    row = optable.ops()[node["op"]]
    listed = list(node.get(row["variadic"], [])) if "variadic" in row else []
    return listed + [node[k] for k in row["operands"]]


Grads = dict[str, Tensor]
Rule = Callable[[NodeView, Tensor, set[str]], Grads]
RULES: dict[str, Rule] = {}


def rule(name: str) -> Callable[[Rule], Rule]:
    """Register a rule under the name an op-table row's `grad` field gives."""

    def register(fn: Rule) -> Rule:
        if name in RULES:
            raise ValueError(f"grad rule {name!r} registered twice")
        RULES[name] = fn
        return fn

    return register


def rule_for(view: NodeView) -> Rule:
    """The rule of the node's op, or VALIDATION naming the op and node (not differentiable)."""
    name = optable.ops()[view.op].get("grad")
    if name is None:
        raise GpuLabError(
            "VALIDATION",
            f"grad: {label(view.id, view.op)} is not differentiable "
            f"(op {view.op!r} has no grad rule in the op table) and "
            "the output depends on an input through it",
            view.id,
        )
    if name not in RULES:
        raise GpuLabError(
            "VALIDATION",
            f"grad: op {view.op!r} names grad rule {name!r}, which gpulab.grad_rules does not have",
            view.id,
        )
    return RULES[name]


# -- helpers -----------------------------------------------------------------------------------


def zeros(like: Tensor) -> Tensor:
    return like.graph.full(list(like.shape), 0.0)


def unbroadcast(dy: Tensor, shape: tuple[int, ...]) -> Tensor:
    """dy summed back to `shape` over the axes broadcasting added or stretched (the reverse of
    NumPy broadcasting): leading axes, then size-1 axes (keepdim), then a reshape."""
    if dy.shape == shape:
        return dy
    if math.prod(shape) == 1:
        return dy.sum().reshape(list(shape))
    out = dy
    for _ in range(dy.ndim - len(shape)):
        out = out.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and out.shape[axis] != 1:
            out = out.sum(axis=axis, keepdim=True)
    return out if out.shape == shape else out.reshape(list(shape))


def expand(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """t broadcast to `shape` (torch's expand): t * ones, exact."""
    return t if t.shape == shape else t * t.graph.full(list(shape), 1.0)


def restore(dy: Tensor, shape: tuple[int, ...], axis: int | None, keepdim: bool) -> Tensor:
    """A reduction's dy with its reduced axes back as size 1 (broadcastable against `shape`)."""
    if axis is None:
        return dy.reshape([1] * len(shape))
    if keepdim:
        return dy
    axis %= len(shape)
    return dy.reshape(list(shape[:axis]) + [1] + list(shape[axis + 1 :]))


def _binary_grads(
    node: NodeView, wanted: set[str], da: Callable[[], Tensor], db: Callable[[], Tensor]
) -> Grads:
    out: Grads = {}
    if "a" in wanted:
        out["a"] = unbroadcast(da(), node["a"].shape)
    if "b" in wanted:
        out["b"] = unbroadcast(db(), node["b"].shape)
    return out


# -- elementwise binary (broadcasting) ------------------------------------------------------


@rule("add")
def _add(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    return _binary_grads(node, wanted, lambda: dy, lambda: dy)


@rule("sub")
def _sub(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    return _binary_grads(node, wanted, lambda: dy, lambda: -dy)


@rule("mul")
def _mul(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    return _binary_grads(node, wanted, lambda: dy * node["b"], lambda: dy * node["a"])


@rule("div")
def _div(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    # torch: grad / b and -grad * ((a / b) / b)
    b = node["b"]
    return _binary_grads(node, wanted, lambda: dy / b, lambda: -dy * (node.out / b))


@rule("extreme_pair")
def _maximum_minimum(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """maximum / minimum: a tie gives each dy / 2 (torch), else dy goes to the selected one."""
    a, b = node["a"], node["b"]
    half = dy / 2.0
    g = dy.graph
    a_wins = a > b if node.op == "maximum" else a < b

    def pick(first: Tensor) -> Tensor:  # where the operand is selected strictly, else 0
        return g.where(a.eq(b), half, g.where(first, dy, 0.0))

    b_wins = b > a if node.op == "maximum" else b < a
    return _binary_grads(node, wanted, lambda: pick(a_wins), lambda: pick(b_wins))


@rule("where")
def _where(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    g, cond = dy.graph, node["cond"]
    return _binary_grads(
        node, wanted, lambda: g.where(cond, dy, 0.0), lambda: g.where(cond, 0.0, dy)
    )


# -- elementwise unary ------------------------------------------------------------------------


def _unary(fn: Callable[[NodeView, Tensor], Tensor]) -> Rule:
    def apply(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
        return {"a": fn(node, dy)}

    return apply


RULES["neg"] = _unary(lambda n, dy: -dy)
RULES["relu"] = _unary(lambda n, dy: dy.graph.where(n.out > 0.0, dy, 0.0))
RULES["zero"] = _unary(lambda n, dy: zeros(n["a"]))
RULES["exp"] = _unary(lambda n, dy: dy * n.out)
RULES["log"] = _unary(lambda n, dy: dy / n["a"])
RULES["sqrt"] = _unary(lambda n, dy: dy / (n.out * 2.0))
RULES["tanh"] = _unary(lambda n, dy: dy * (1.0 - n.out * n.out))
RULES["sigmoid"] = _unary(lambda n, dy: dy * (1.0 - n.out) * n.out)
RULES["gelu"] = _unary(lambda n, dy: n["a"].gelu_grad(dy))
RULES["square"] = _unary(lambda n, dy: dy * (n["a"] * 2.0))


@rule("abs")
def _abs(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    a, g = node["a"], dy.graph
    return {"a": g.where(a > 0.0, dy, g.where(a < 0.0, -dy, 0.0))}


@rule("clamp")
def _clamp(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    a, g = node["a"], dy.graph
    lo, hi = node.attrs["min"], node.attrs["max"]
    out = dy
    if hi is not None:
        out = g.where(a <= float(hi), out, 0.0)
    if lo is not None:
        out = g.where(a >= float(lo), out, 0.0)
    return {"a": out}


@rule("dropout")
def _dropout(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    return {
        "a": dy.graph.op(
            "dropout", a=dy, counter=node["counter"], p=node.attrs["p"], seed=node.attrs["seed"]
        )
    }


@rule("gelu_grad")
def _gelu_grad(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """gelu_grad(a, b) = b * gelu'(a): d/db = gelu_grad(a, dy), d/da = dy * b * gelu''(a),
    gelu''(x) = phi(x) * (2 - x^2)."""
    a, b = node["a"], node["b"]
    out: Grads = {}
    if "b" in wanted:
        out["b"] = a.gelu_grad(dy)
    if "a" in wanted:
        phi = (a * a * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))
        out["a"] = dy * b * (phi * (2.0 - a * a))
    return out


# -- matmul -----------------------------------------------------------------------------------


@rule("matmul")
def _matmul(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """[.., M, K] @ [.., K, N]: da = dy @ b^T, db = a^T @ dy, summed over broadcast batch axes."""
    a, b = node["a"], node["b"]
    return _binary_grads(node, wanted, lambda: dy @ b.transpose(), lambda: a.transpose() @ dy)


@rule("matmul_q")
def _matmul_q(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """a @ w.T with w block-quantized: da = dy @ dequantize(w); w itself has no gradient (it is
    not float32, so autograd never asks)."""
    return {"a": dy @ node["b"].dequantize()}


# -- reductions -------------------------------------------------------------------------------


@rule("sum")
def _sum(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    a = node["a"]
    back = restore(dy, a.shape, node.attrs["axis"], node.attrs["keepdim"])
    return {"a": expand(back, a.shape)}


@rule("mean")
def _mean(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    a, axis = node["a"], node.attrs["axis"]
    count = a.size if axis is None else a.shape[axis]
    back = restore(dy, a.shape, axis, node.attrs["keepdim"])
    return {"a": expand(back, a.shape) / float(count)}


@rule("reduce_extreme")
def _reduce_extreme(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """reduce_max / reduce_min: dy / (number of ties) to each element equal to the result, as
    torch's (grad / mask.sum()) * mask. NaN as torch too: over all elements (torch's max()) the
    NaNs share dy when the result is NaN; over an axis (torch's amax) a row whose result is NaN
    gets NaN everywhere (no element equals it: dy / 0 * 0)."""
    a, axis, keep, g = node["a"], node.attrs["axis"], node.attrs["keepdim"], dy.graph
    out = restore(node.out, a.shape, axis, keep)
    hit = a.eq(out).cast("float32")
    if axis is None:
        hit = g.where(out.ne(out), a.ne(a).cast("float32"), hit)
    count = hit.sum(axis=axis, keepdim=True)
    if axis is None:
        count = count.reshape([1] * a.ndim)
    return {"a": restore(dy, a.shape, axis, keep) / count * hit}


# -- rows: softmax family, cross entropy ------------------------------------------------------


@rule("softmax")
def _softmax(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    y, axis = node.out, node.attrs["axis"]
    return {"a": y * (dy - (dy * y).sum(axis=axis, keepdim=True))}


@rule("log_softmax")
def _log_softmax(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    y, axis = node.out, node.attrs["axis"]
    return {"a": dy - y.exp() * dy.sum(axis=axis, keepdim=True)}


@rule("cross_entropy")
def _cross_entropy(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    a, b = node["a"], node["b"]
    n = float(a.shape[0])
    scale = dy / n  # dy is [] (the loss is the mean over rows)
    out: Grads = {}
    if "a" in wanted:
        out["a"] = (a.softmax(axis=1) * b.sum(axis=1, keepdim=True) - b) * scale
    if "b" in wanted:
        out["b"] = -(a.log_softmax(axis=1) * scale)
    return out


@rule("cross_entropy_grad")
def _cross_entropy_grad(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """(softmax(a) - b) / N: d/da = softmax's rule of dy / N, d/db = -dy / N."""
    a = node["a"]
    n = float(a.shape[0])
    out: Grads = {}
    if "a" in wanted:
        y = a.softmax(axis=1)
        d = dy / n
        out["a"] = y * (d - (d * y).sum(axis=1, keepdim=True))
    if "b" in wanted:
        out["b"] = -dy / n
    return out


# -- layout -----------------------------------------------------------------------------------

RULES["reshape"] = _unary(lambda n, dy: dy.reshape(list(n["a"].shape)))
RULES["transpose"] = _unary(lambda n, dy: dy.transpose())


@rule("permute")
def _permute(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    dims = [int(d) % node["a"].ndim for d in node.attrs["dims"]]
    inverse = [dims.index(k) for k in range(len(dims))]
    return {"a": dy.permute(inverse)}


@rule("slice")
def _slice(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    a = node["a"]
    return {"a": dy.graph.op("slice_scatter", a=zeros(a), src=dy, slices=node.attrs["slices"])}


@rule("slice_scatter")
def _slice_scatter(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    slices, g = node.attrs["slices"], dy.graph
    out: Grads = {}
    if "a" in wanted:
        out["a"] = g.op("slice_scatter", a=dy, src=zeros(node["src"]), slices=slices)
    if "src" in wanted:
        out["src"] = g.op("slice", a=dy, slices=slices)
    return out


@rule("index_select")
def _index_select(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    return {"a": zeros(node["a"]).index_add(node.attrs["axis"], node["idx"], dy)}


@rule("gather")
def _gather(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    return {"a": zeros(node["a"]).scatter_add(node.attrs["axis"], node["idx"], dy)}


@rule("index_add")
def _index_add(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    out: Grads = {}
    if "a" in wanted:
        out["a"] = dy
    if "src" in wanted:
        out["src"] = dy.index_select(node.attrs["axis"], node["idx"])
    return out


@rule("scatter_add")
def _scatter_add(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    out: Grads = {}
    if "a" in wanted:
        out["a"] = dy
    if "src" in wanted:
        out["src"] = dy.gather(node.attrs["axis"], node["idx"])
    return out


@rule("concat")
def _concat(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    axis = node.attrs["axis"] % dy.ndim
    out: Grads = {}
    start = 0
    for name, t in node.operands.items():
        stop = start + t.shape[axis]
        if name in wanted:
            out[name] = dy.graph.op("slice", a=dy, slices=_along(dy.ndim, axis, start, stop))
        start = stop
    return out


@rule("pad")
def _pad(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    a = node["a"]
    slices = [[int(w[0]), int(w[0]) + n, 1] for w, n in zip(node.attrs["widths"], a.shape)]
    return {"a": dy.graph.op("slice", a=dy, slices=slices)}


def _along(rank: int, axis: int, start: int, stop: int) -> list[list[Any]]:
    return [[start, stop, 1] if k == axis else [None, None, 1] for k in range(rank)]


# -- protocol v6 window ops: conv2d, max_pool2d, avg_pool2d, resize -------------------------------
# A window's taps are strided slices of the padded input (tap (i, j) of output (y, x) reads
# padded[y * s + i * d, x * s + j * d]); the gradient of a tap goes back by slice_scatter into
# zeros, taps added in ascending (i, j) order, then the padding is sliced off. avg_pool2d and
# resize are separable linear maps, so their transposes are probed from the op itself (the op
# on an identity gives its own weights: one source for the window and coordinate rules).

FULL: list[Any] = [None, None, 1]


def _extent(n: int, k: int, s: int, d: int, before: int, after: int, out: int) -> int:
    """The padding after an axis that covers every tap (ceil_mode windows may overhang)."""
    return max(after, (out - 1) * s + (k - 1) * d + 1 - n - before)


def _window_pads(
    node: NodeView, a: Tensor, kernel: list[int], out_hw: tuple[int, int]
) -> list[list[int]]:
    s, d, p = node.attrs["strides"], node.attrs["dilations"], node.attrs["padding"]
    ends = [
        _extent(a.shape[2 + k], kernel[k], s[k], d[k], p[k], p[2 + k], out_hw[k]) for k in range(2)
    ]
    return [[0, 0], [0, 0], [p[0], ends[0]], [p[1], ends[1]]]


def _tap_slices(node: NodeView, i: int, j: int, out_hw: tuple[int, int]) -> list[list[Any]]:
    s, d = node.attrs["strides"], node.attrs["dilations"]
    return [FULL, FULL] + [
        [t * d[k], t * d[k] + (out_hw[k] - 1) * s[k] + 1, s[k]] for k, t in ((0, i), (1, j))
    ]


class _TapSum:
    """The gradient of the padded input, one tap's contribution at a time (ascending taps)."""

    def __init__(self, a: Tensor, widths: list[list[int]]) -> None:
        self.a, self.widths = a, widths
        self.shape = [n + lo + hi for n, (lo, hi) in zip(a.shape, widths)]
        self.total: Tensor | None = None

    def add(self, part: Tensor, slices: list[list[Any]]) -> None:
        g = part.graph
        placed = g.op("slice_scatter", a=g.full(self.shape, 0.0), src=part, slices=slices)
        self.total = placed if self.total is None else self.total + placed

    def result(self) -> Tensor:
        keep = [[lo, lo + n, 1] for n, (lo, _) in zip(self.a.shape, self.widths)]
        if self.total is None:
            return zeros(self.a)
        return self.total.graph.op("slice", a=self.total, slices=keep)


def _padded(a: Tensor, widths: list[list[int]], value: float = 0.0) -> Tensor:
    return a.pad(widths, value=value) if any(lo or hi for lo, hi in widths) else a


@rule("conv2d")
def _conv2d(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """da: each tap's sum over output channels of dy * w[:, :, i, j] (groups as a batch axis of
    matmul), placed back; dw[:, :, i, j]: dy against that tap over (n, y, x); dbias: dy summed
    over (n, y, x)."""
    a, w = node["a"], node["w"]
    n, c = a.shape[:2]
    m, cg, kh, kw = w.shape
    groups = int(node.attrs["groups"])
    out_hw = (dy.shape[2], dy.shape[3])
    p = out_hw[0] * out_hw[1]
    widths = _window_pads(node, a, [kh, kw], out_hw)
    padded = _padded(a, widths)
    # dy as [G, M/G, N * oH * oW]
    dyr = dy.reshape(n, groups, m // groups, p).permute(1, 2, 0, 3)
    dyr = dyr.reshape(groups, m // groups, n * p)
    back, dw = _TapSum(a, widths), None
    for i in range(kh):
        for j in range(kw):
            at = _tap_slices(node, i, j, out_hw)
            if "w" in wanted:
                tap = padded.graph.op("slice", a=padded, slices=at)
                tr = tap.reshape(n, groups, cg, p).permute(1, 2, 0, 3).reshape(groups, cg, n * p)
                part = (dyr @ tr.transpose()).reshape(m, cg, 1, 1)
                base = zeros(w) if dw is None else dw
                dw = w.graph.op(
                    "slice_scatter",
                    a=base,
                    src=part,
                    slices=[FULL, FULL, [i, i + 1, 1], [j, j + 1, 1]],
                )
            if "a" in wanted:
                wij = w.graph.op("slice", a=w, slices=[FULL, FULL, [i, i + 1, 1], [j, j + 1, 1]])
                dt = wij.reshape(groups, m // groups, cg).transpose() @ dyr  # [G, Cg, N*P]
                dt = dt.reshape(c, n, p).permute(1, 0, 2).reshape(n, c, *out_hw)
                back.add(dt, at)
    out: Grads = {}
    if "a" in wanted:
        out["a"] = back.result()
    if "w" in wanted and dw is not None:
        out["w"] = dw
    if "bias[0]" in wanted:
        out["bias[0]"] = dy.sum(axis=3).sum(axis=2).sum(axis=0)
    return out


@rule("max_pool2d")
def _max_pool2d(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """dy goes to the first tap (ascending (i, j)) equal to the window's max, as torch's
    max_pool2d (its index is the first maximum); padding (-inf here) never wins. A window whose
    max is NaN passes nothing (torch: its last NaN tap gets dy; not worth a second pass)."""
    a, y = node["a"], node.out
    kernel = list(node.attrs["kernel"])
    out_hw = (y.shape[2], y.shape[3])
    widths = _window_pads(node, a, kernel, out_hw)
    padded = _padded(a, widths, -math.inf)
    g = dy.graph
    free = g.full(list(y.shape), 1.0)  # 1 while the window's max is not yet claimed
    back = _TapSum(a, widths)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            at = _tap_slices(node, i, j, out_hw)
            take = g.where(g.op("slice", a=padded, slices=at).eq(y), free, 0.0)
            free = free - take
            back.add(dy * take, at)
    return {"a": back.result()}


def _identity_probe(g: Graph, n: int, axis: int) -> Tensor:
    """The identity [n, n] as [1, n, n, 1] (axis 2) or [1, n, 1, n] (axis 3): channel k holds
    the unit vector e_k along that spatial axis."""
    eye = [1.0 if r == k else 0.0 for r in range(n) for k in range(n)]
    return g.tensor(eye, shape=[1, n, n, 1] if axis == 2 else [1, n, 1, n])


def _separable_transpose(
    node: NodeView, dy: Tensor, probe: Callable[[Tensor, int], Tensor]
) -> Tensor:
    """da = Ry^T @ dy @ Rx for a map out = Ry a Rx^T along (H, W), each Ry^T read from the op
    applied to an identity along its axis (probe(identity, axis) -> [1, n, o, 1] / [1, n, 1, o])."""
    a, g = node["a"], dy.graph
    h, w = a.shape[2], a.shape[3]
    ry_t = probe(_identity_probe(g, h, 2), 2).reshape(h, dy.shape[2])
    rx_t = probe(_identity_probe(g, w, 3), 3).reshape(w, dy.shape[3])
    return (ry_t @ dy) @ rx_t.transpose()


def _axis_attrs(node: NodeView, axis: int) -> dict[str, Any]:
    """The window attrs restricted to one spatial axis (the other: one tap, no padding)."""
    k = axis - 2
    p = node.attrs["padding"]

    def pick(v: list[int], one: int) -> list[int]:
        return [v[0], one] if k == 0 else [one, v[1]]

    return {
        "kernel": pick(list(node.attrs["kernel"]), 1),
        "strides": pick(list(node.attrs["strides"]), 1),
        "dilations": pick(list(node.attrs["dilations"]), 1),
        "padding": [p[0], 0, p[2], 0] if k == 0 else [0, p[1], 0, p[3]],
    }


@rule("avg_pool2d")
def _avg_pool2d(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """Separable (the count is cy * cx): the transpose of each axis's averaging matrix."""
    rest = {k: node.attrs[k] for k in ("ceil_mode", "count_include_pad")}

    def probe(eye: Tensor, axis: int) -> Tensor:
        return eye.graph.op("avg_pool2d", a=eye, **_axis_attrs(node, axis), **rest)

    return {"a": _separable_transpose(node, dy, probe)}


@rule("resize")
def _resize(node: NodeView, dy: Tensor, wanted: set[str]) -> Grads:
    """Separable (nearest picks, bilinear weights wy * wx): each axis's matrix transposed."""
    size = list(node.attrs["size"])
    rest = {k: node.attrs[k] for k in ("mode", "coordinate_transformation_mode", "nearest_mode")}

    def probe(eye: Tensor, axis: int) -> Tensor:
        target = [size[0], 1] if axis == 2 else [1, size[1]]
        return eye.graph.op("resize", a=eye, size=target, **rest)

    return {"a": _separable_transpose(node, dy, probe)}
