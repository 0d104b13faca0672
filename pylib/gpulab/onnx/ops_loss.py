"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (class axis 1, optional class weights,
ignore_index, reduction none / sum / mean-weighted) as composites: the class axis moved last,
a one-hot from comparing the labels with the class indices, then sums."""

from __future__ import annotations

from ..graph import Tensor
from .ctx import NodeCtx, Op
from .values import INT32_MAX, INT32_MIN, Value, int_range


def _class_last(x: Tensor) -> Tensor:
    if x.ndim == 2:
        return x
    return x.permute([0] + list(range(2, x.ndim)) + [1])


def nll(cx: NodeCtx, logp: Tensor, target: Tensor, weight: Tensor | None) -> Tensor:
    g = cx.g
    reduction = cx.attr("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        raise cx.fail(f"attribute 'reduction' = {reduction!r}")
    x = _class_last(logp)
    classes = x.shape[-1]
    labels = target.reshape(list(target.shape) + [1])
    iota = g.tensor(int_range(0, classes), dtype="int32")
    hot = labels.eq(iota).cast("float32")  # [N, d..., C]; out-of-range labels: all zero
    picked = (x * hot).sum(axis=-1)
    w = (hot * weight).sum(axis=-1) if weight is not None else None
    ignore = cx.attr("ignore_index", None)
    # labels are held as int32: an ignore_index outside int32 matches none of them
    if ignore is not None and INT32_MIN <= ignore <= INT32_MAX:
        keep = target.ne(g.tensor(ignore, dtype="int32")).cast("float32")
        w = keep if w is None else w * keep
    loss = -picked if w is None else -(picked * w)
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    return total / (w.sum() if w is not None else float(loss.size))


def _nll(cx: NodeCtx) -> list[Value]:
    weight = cx.t(2) if cx.has(2) else None
    return [nll(cx, cx.t(0), cx.t(1), weight)]


def _sce(cx: NodeCtx) -> list[Value]:
    scores = cx.t(0)
    logp = scores.log_softmax(axis=1) if scores.ndim > 1 else scores.log_softmax(axis=0)
    weight = cx.t(2) if cx.has(2) else None
    return [nll(cx, logp, cx.t(1), weight), logp]


LOSS_OPS: dict[str, Op] = {
    "NegativeLogLikelihoodLoss": Op(_nll, frozenset({"reduction", "ignore_index"})),
    "SoftmaxCrossEntropyLoss": Op(_sce, frozenset({"reduction", "ignore_index"})),
}
