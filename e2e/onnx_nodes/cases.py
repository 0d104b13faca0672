"""The node-test cases (pylib/gpulab/conformance/onnx_nodes.py, shipped in the wheel as
gpulab.conformance.onnx_nodes), re-exported for this command and its tests."""

from gpulab.conformance.onnx_nodes import (
    NodeCase,
    collect,
    judge,
    strict_graph,
    translate,
    translate_all,
)

__all__ = ["NodeCase", "collect", "judge", "strict_graph", "translate", "translate_all"]
