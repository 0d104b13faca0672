"""The operator table: ONNX op type -> its lowering (ctx.Op), one dict for the whole loader.

Each lowering builds protocol nodes only through the public op API (Graph, Tensor methods,
`Graph.op`) and the shared composites in gpulab.functional.
"""

from __future__ import annotations

from .ctx import NodeCtx, Op
from .ops_attention import ATTENTION_OPS
from .ops_loss import LOSS_OPS
from .ops_math import MATH_OPS
from .ops_more import MORE_OPS
from .ops_nn import NN_OPS
from .ops_pool import POOL_OPS
from .ops_resize import RESIZE_OPS
from .ops_shape import SHAPE_OPS

OPS: dict[str, Op] = {
    **MATH_OPS,
    **SHAPE_OPS,
    **NN_OPS,
    **POOL_OPS,
    **ATTENTION_OPS,
    **LOSS_OPS,
    **RESIZE_OPS,
    **MORE_OPS,
}


def supported_ops() -> list[str]:
    """The supported ONNX operators (default domain), sorted."""
    return sorted(OPS)


__all__ = ["OPS", "NodeCtx", "Op", "supported_ops"]
