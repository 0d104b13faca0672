"""The operator table: ONNX op type -> its lowering (ctx.Op), one dict for the whole loader.

The operators an entry of the op library declares (gpulab.functional) come from declared.py;
the others are lowered by hand here (ops_*.py), through the public op API (Graph, Tensor
methods, `Graph.op`) and the shared composites in gpulab.functional.
"""

from __future__ import annotations

from .ctx import NodeCtx, Op
from .declared import DECLARED_OPS
from .ops_attention import ATTENTION_OPS
from .ops_loss import LOSS_OPS
from .ops_math import MATH_OPS
from .ops_more import MORE_OPS
from .ops_nn import NN_OPS
from .ops_pool import POOL_OPS
from .ops_resize import RESIZE_OPS
from .ops_shape import SHAPE_OPS

OPS: dict[str, Op] = {
    **DECLARED_OPS,
    **MATH_OPS,
    **SHAPE_OPS,
    **NN_OPS,
    **POOL_OPS,
    **ATTENTION_OPS,
    **LOSS_OPS,
    **RESIZE_OPS,
    **MORE_OPS,
}
_HAND = (MATH_OPS, SHAPE_OPS, NN_OPS, POOL_OPS, ATTENTION_OPS, LOSS_OPS, RESIZE_OPS, MORE_OPS)
_twice = set(DECLARED_OPS) & {op for table in _HAND for op in table}
if _twice:
    raise ValueError(f"onnx: operators both declared and lowered by hand: {sorted(_twice)}")


def supported_ops() -> list[str]:
    """The supported ONNX operators (default domain), sorted."""
    return sorted(OPS)


__all__ = ["OPS", "NodeCtx", "Op", "supported_ops"]
