"""Models as exporters write them, loaded by gpulab.onnx as given (no input bound at load) and
matched against ONNX Runtime: shape subgraphs over constants fold at load, and a tiny BERT from
the installed `transformers`, exported in the test by `torch.onnx.export`, matches on cpu-python
(wgpu refuses it by name: a rank-5 node)."""

from __future__ import annotations

import io

import numpy as np
import onnxruntime as ort
import pytest
from gpulab import onnx as gonnx
from gpulab.errors import GpuLabError
from onnx import TensorProto, helper


def _array(entry: dict) -> np.ndarray:
    return np.asarray(entry["data"]).reshape(entry["shape"])


def test_an_expand_whose_shape_is_a_where_over_constants_loads() -> None:
    """The exporters' `Where(Equal(s, -1), ConstantOfShape(..), s)` (torch's expand with -1)
    is a shape known at load: it folds, so Expand's result is static; ORT agrees."""
    shape = helper.make_tensor("s", TensorProto.INT64, [2], [-1, 3])
    nodes = [
        helper.make_node("Constant", [], ["s"], value=shape),
        helper.make_node("Constant", [], ["two"], value_ints=[2]),
        helper.make_node(
            "ConstantOfShape",
            ["two"],
            ["ones"],
            value=helper.make_tensor("v", TensorProto.INT64, [1], [1]),
        ),
        helper.make_node("Constant", [], ["minus1"], value_int=-1),
        helper.make_node("Equal", ["s", "minus1"], ["is_free"]),
        helper.make_node("Where", ["is_free", "ones", "s"], ["target"]),
        helper.make_node("Expand", ["x", "target"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "expand_where",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    raw = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    raw = raw.SerializeToString()
    x = np.array([[2.5]], np.float32)
    want = ort.InferenceSession(raw).run(None, {"x": x})[0]
    model = gonnx.load(raw)
    got = _array(model.run({"x": x}, backend="cpu-python")["y"])
    assert got.shape == want.shape == (1, 3)
    np.testing.assert_array_equal(got, want)


def test_a_where_over_tensors_still_selects_at_run_time() -> None:
    """Folding is for constants only: a Where over a fed condition stays a graph node."""
    nodes = [helper.make_node("Where", ["c", "a", "b"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "where",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, [3]),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    raw = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    raw = raw.SerializeToString()
    feeds = {
        "c": np.array([True, False, True]),
        "a": np.array([1, 2, 3], np.float32),
        "b": np.array([-1, -2, -3], np.float32),
    }
    got = _array(gonnx.load(raw).run(feeds, backend="cpu-python")["y"])
    np.testing.assert_array_equal(got, [1, -2, 3])


def _tiny_bert() -> tuple[bytes, dict[str, np.ndarray]]:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    bert = transformers.BertModel(config).eval()

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids, mask):
            return self.bert(input_ids=ids, attention_mask=mask).last_hidden_state

    ids = torch.randint(0, 64, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[1, 5:] = 0  # padding: the mask path (Where / ConstantOfShape / Expand) matters
    buf = io.BytesIO()
    torch.onnx.export(
        LastHidden(),
        (ids, mask),
        buf,
        input_names=["input_ids", "attention_mask"],
        output_names=["last_hidden_state"],
        dynamo=False,  # the TorchScript exporter: the dynamo one needs onnxscript
        opset_version=17,
    )
    return buf.getvalue(), {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}


@pytest.mark.slow
def test_an_exported_bert_matches_onnxruntime() -> None:
    raw, feeds = _tiny_bert()
    import onnx

    ops = {n.op_type for n in onnx.load_from_string(raw).graph.node}
    assert {"Expand", "Where", "ConstantOfShape"} <= ops  # the subgraph that was refused
    want = ort.InferenceSession(raw).run(None, feeds)[0]
    model = gonnx.load(raw)  # as given: nothing bound, no input_shapes
    got = _array(model.run(feeds, backend="cpu-python")["last_hidden_state"])
    assert got.shape == want.shape == (2, 7, 16)
    assert np.abs(got - want).max() <= 1e-5


@pytest.mark.slow
def test_an_exported_bert_is_refused_by_name_on_wgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """wgpu's kernels index up to rank 4 (lowering_rank.py); the BERT's attention mask keeps a
    rank-5 cast, which wgpu refuses by name before any device work, never a wrong number.
    When wgpu takes rank 5, this test fails: make it match ONNX Runtime as above."""
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")  # lavapipe here
    raw, feeds = _tiny_bert()
    model = gonnx.load(raw)
    with pytest.raises(GpuLabError, match=r"wgpu has no kernel for \w+ at rank 5"):
        model.run(feeds, backend="wgpu")
