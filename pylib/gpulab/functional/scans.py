"""Running sums (torch.cumsum, ONNX CumSum): a matmul by a triangle of ones.

Output i of a running sum adds inputs 0..i: the [n, n] matrix with a one in row j, column i
where output i adds input j, so one matmul along the axis gives every prefix at once (the
protocol has no scan op), and its gradient is the one autograd's matmul rule (the reverse
running sum, as torch's cumsum backward). Each output adds its terms in ascending order
(the matmul's k order, the other terms exact zeros), as torch's sequential loop does.
"""

from __future__ import annotations

import array

from ..graph import Tensor
from .library import declare


def triangle_of_ones(g: object, n: int, exclusive: bool, reverse: bool) -> Tensor:
    """The [n, n] float32 matrix: row j (input j) has ones in the columns of the outputs that
    add it (i >= j; i > j when exclusive; i <= j / i < j when reverse)."""
    one, zero = array.array("f", [1.0]), array.array("f", [0.0])
    rows = array.array("f")
    for j in range(n):
        if reverse:  # output i adds inputs i (or i + 1) .. n - 1: ones before column `upto`
            upto = min(n, max(0, j + (0 if exclusive else 1)))
            rows.extend(one * upto + zero * (n - upto))
        else:  # output i adds inputs 0 .. i (or i - 1): ones from column `start`
            start = min(n, j + (1 if exclusive else 0))
            rows.extend(zero * start + one * (n - start))
    return g.tensor(rows, shape=[n, n])  # type: ignore[attr-defined]


def running_sum(x: Tensor, axis: int, exclusive: bool = False, reverse: bool = False) -> Tensor:
    """Running sums of float32 x along axis (0 <= axis < x.ndim)."""
    n = x.shape[axis]
    tri = triangle_of_ones(x.graph, n, exclusive, reverse)
    if x.ndim == 1:
        return (x.reshape([1, n]) @ tri).reshape([n])
    if axis == x.ndim - 1:
        return x @ tri
    perm = [d for d in range(x.ndim) if d != axis] + [axis]
    back = [perm.index(d) for d in range(x.ndim)]
    return (x.permute(perm) @ tri).permute(back)


@declare(torch="cumsum", method="cumsum")
def cumsum(x: Tensor, dim: int) -> Tensor:
    """The running sum along dim (torch.cumsum): output i adds inputs 0..i in order."""
    if x.ndim == 0:
        if dim not in (0, -1):
            raise IndexError(f"cumsum: dim {dim} out of range for a 0-dim tensor")
        return x * 1.0
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"cumsum: dim {dim} out of range for {x.ndim} dimensions")
    if x.shape[dim % x.ndim] == 0:
        return x * 1.0
    return running_sum(x, dim % x.ndim)
