"""The ONNX loader's limits, in one place (docs/onnx.md lists them).

Rank, elements per tensor, total elements and node count are the protocol's own (the op
table's `limits`, so a loaded model never builds a graph the validator refuses for size); the
rest bound what the protobuf reader and the loader hold before any graph exists.
"""

from __future__ import annotations

from .. import optable

_TABLE = optable.limits()

LIMITS: dict[str, int] = {
    "max_model_bytes": 256 * 1024 * 1024,  # the whole ModelProto
    "max_nodes": int(_TABLE["max_nodes"]),  # ONNX nodes (and initializers, graph values)
    "max_rank": int(_TABLE["max_rank"]),  # every tensor the model computes
    "max_elements": int(_TABLE["max_elements"]),  # per tensor
    "max_total_elements": int(_TABLE["max_total_elements"]),  # all the model's tensors
    "max_macs": 20_000_000_000,  # multiply-accumulates of one inference (MatMul, Gemm, Conv)
    "max_string_bytes": 1 << 16,  # a name, a string attribute
    "max_list_values": 1 << 22,  # dims, ints and floats read into lists, all together
    "max_fold_elements": 1 << 16,  # a constant folded at load in Python (shapes, axes)
}
