"""Shape rules of the protocol-v6 window ops (conv2d, max_pool2d, avg_pool2d, resize):
docs/protocol.md "The v6 window ops". Twin of backends-js/src/shapes-conv.mjs, message for
message; shapes.py adds CONV_RULES to its table. The window geometry (window_axis) is also
what every kernel reads, so no kernel recomputes an output size."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from . import optable

Shape = tuple[int, ...]
Attrs = dict[str, Any]
AXES = ("H", "W")


class ConvShapeError(ValueError):
    """A window rule refused its operands (VALIDATION; shapes.py re-raises it as ShapeError)."""


class ConvLimitError(ValueError):
    """A window op past max_macs_per_node or max_resize_product (LIMIT)."""


def _fmt(shape: Any) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _require_nchw(name: str, s: Shape) -> None:
    if len(s) != 4:
        raise ConvShapeError(f"operand {name} must be [N, C, H, W] (rank 4), got {name} {_fmt(s)}")
    # N or C may be 0 (an empty result); a window over an empty plane has nothing to read
    if s[2] == 0 or s[3] == 0:
        raise ConvShapeError(f"operand {name} {_fmt(s)} has an empty plane (H and W must be >= 1)")


def window_axis(
    n: int, k: int, s: int, d: int, before: int, after: int, ceil: bool = False
) -> int | str:
    """One spatial axis: the output count, or the problem (a str). A last window starting past
    the input and the leading padding is dropped in ceil mode, as torch."""
    extent = d * (k - 1) + 1
    padded = n + before + after
    if padded < extent:
        return (
            f"the kernel spans {extent} (kernel {k}, dilation {d}), more than the padded "
            f"input's {padded} ({n} + padding {before} + {after})"
        )
    span = padded - extent
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= n + before:
        out -= 1
    return out


def _empty_window(n: int, k: int, s: int, d: int, before: int, out: int) -> int:
    """The first window whose taps all miss the input, or -1 (only windows starting in the
    leading padding can)."""
    for o in range(out):
        start = o * s - before
        if start >= 0:
            return -1
        j = -(start // d)  # ceil(-start / d): the first tap at or past 0
        if j >= k or start + j * d >= n:
            return o
    return -1


def _window_out(a: Shape, kernel: list[int], attrs: Attrs, pooling: bool = False) -> list[int]:
    out = []
    for i in range(2):
        n, before, after = a[2 + i], attrs["padding"][i], attrs["padding"][2 + i]
        k, s, d = kernel[i], attrs["strides"][i], attrs["dilations"][i]
        r = window_axis(n, k, s, d, before, after, pooling and attrs["ceil_mode"])
        if isinstance(r, str):
            raise ConvShapeError(f"along {AXES[i]} of a {_fmt(a)}: {r}")
        if pooling:
            o = _empty_window(n, k, s, d, before, r)
            if o >= 0:
                raise ConvShapeError(
                    f"along {AXES[i]} of a {_fmt(a)}: window {o} (padding "
                    f"{before}) holds no element of a"
                )
        out.append(r)
    return out


def _check_macs(out: Shape, taps: int) -> None:
    limit = optable.limits()["max_macs_per_node"]
    count = math.prod(out)
    if count * taps > limit:
        raise ConvLimitError(
            f"{count * taps} multiply-adds ({count} results x {taps} taps), "
            f"more than max_macs_per_node {limit}"
        )


def window_taps(op: str, shapes: list[Shape], attrs: Attrs) -> int:
    """Taps per result element of a window op (the cost model's and the MAC limit's K):
    conv2d C/groups x kH x kW, the pools kH x kW, resize 4 (linear) or 1."""
    if op == "conv2d":
        w = shapes[-1]
        return w[1] * w[2] * w[3]
    if op == "resize":
        return 4 if attrs["mode"] == "linear" else 1
    return attrs["kernel"][0] * attrs["kernel"][1]


def _conv2d(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    has_bias = len(shapes) == 3
    a, w = shapes[1:] if has_bias else shapes
    _require_nchw("a", a)
    if len(w) != 4:
        raise ConvShapeError(f"operand w must be [M, C / groups, kH, kW] (rank 4), got w {_fmt(w)}")
    if w[2] == 0 or w[3] == 0:
        raise ConvShapeError(f"operand w {_fmt(w)} has an empty kernel (kH and kW must be >= 1)")
    groups = attrs["groups"]
    if a[1] % groups:
        raise ConvShapeError(f"groups {groups} does not divide a {_fmt(a)}'s {a[1]} channels")
    if w[0] % groups:
        raise ConvShapeError(
            f"groups {groups} does not divide w {_fmt(w)}'s {w[0]} output channels"
        )
    if w[1] * groups != a[1]:
        raise ConvShapeError(
            f"operand w {_fmt(w)} takes {w[1]} input channels per group; a "
            f"{_fmt(a)} with groups {groups} has {a[1] // groups}"
        )
    if has_bias and (len(shapes[0]) != 1 or shapes[0][0] != w[0]):
        raise ConvShapeError(
            f"operand bias[0] must be [{w[0]}] (one per output channel of w "
            f"{_fmt(w)}), got {_fmt(shapes[0])}"
        )
    out = (a[0], w[0], *_window_out(a, [w[2], w[3]], attrs))
    if a[1] == 0 and math.prod(out) > 0:
        raise ConvShapeError(f"a {_fmt(a)} has no input channel: each result would sum no element")
    _check_macs(out, w[1] * w[2] * w[3])
    return out, attrs


def _pool2d(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    a = shapes[0]
    _require_nchw("a", a)
    out = (a[0], a[1], *_window_out(a, attrs["kernel"], attrs, pooling=True))
    _check_macs(out, attrs["kernel"][0] * attrs["kernel"][1])
    return out, attrs


def _resize(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    a = shapes[0]
    _require_nchw("a", a)
    size = attrs["size"]
    limit = optable.limits()["max_resize_product"]
    for i in range(2):
        # the coordinate maps are exact 32-bit integer arithmetic (docs/protocol.md)
        if (a[2 + i] + 1) * size[i] > limit:
            raise ConvLimitError(
                f"along {AXES[i]}: ({a[2 + i]} + 1) x {size[i]} is more than "
                f"max_resize_product {limit}"
            )
    return (a[0], a[1], size[0], size[1]), attrs


CONV_RULES: dict[str, Callable[[list[Shape], Attrs], tuple[Shape, Attrs]]] = {
    "conv2d": _conv2d,
    "pool2d": _pool2d,
    "resize": _resize,
}
