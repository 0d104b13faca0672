"""torch.compile(backend="gpulab") graphs with more outputs than the protocol's max_outputs
(256): the outputs are packed into a few (torch_backend/packing.py) and sliced apart on the
host, so such a graph runs on gpulab (before: LIMIT, and the graph ran in eager PyTorch)."""

from __future__ import annotations

import copy

import gpulab.torch_backend as tb
import pytest
import torch
from gpulab.graph import Graph
from gpulab.optable import limits
from gpulab.torch_backend import packing
from torch import nn

CPU = {"backend": "cpu-python", "verbose": False}


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_many_outputs_of_every_dtype_come_back_in_place() -> None:
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        floats = [x * float(i) for i in range(150)]
        masks = [x > float(i) / 100 for i in range(60)]
        ints = [torch.argmax(x + float(i), dim=1) for i in range(60)]
        return (*floats, *masks, *ints, x.sum())

    x = torch.rand(3, 5)
    since = len(tb.RECORDS)
    with torch.no_grad():
        got = torch.compile(fn, backend="gpulab", options=CPU, dynamic=False)(x)
        want = fn(x)
    assert len(got) == len(want) > limits()["max_outputs"]
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        torch.testing.assert_close(a, b)
    (record,) = tb.RECORDS[since:]
    assert record.backend == "cpu-python" and record.reason == "", record


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_deep_training_forward_past_max_outputs_runs_on_gpulab() -> None:
    """A 100-layer MLP's training forward saves more than 256 values for its backward."""
    torch.manual_seed(9)
    layers = [m for _ in range(100) for m in (nn.Linear(4, 4), nn.Tanh())]
    model, x = nn.Sequential(*layers), torch.randn(2, 4)
    ref = copy.deepcopy(model)
    since = len(tb.RECORDS)
    out = torch.compile(model, backend="gpulab", options=CPU, dynamic=False)(x)
    want = ref(x)
    torch.testing.assert_close(out, want)
    out.sum().backward()
    want.sum().backward()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)
    records = [r for r in tb.RECORDS[since:] if "." not in r.label]
    assert [r.label.split("#")[0] for r in records] == ["forward", "backward"]
    assert all(r.backend == "cpu-python" for r in records), records


def test_packing_layout_and_refusal() -> None:
    g = Graph()
    x = g.input([2, 3])
    outs = {f"o{i}": x * float(i) for i in range(limits()["max_outputs"] + 1)}
    packed, slots = packing.pack(outs)
    assert len(packed) == 1 and slots["o0"] == packing.Slot("pack0", 0, (2, 3))
    assert slots["o3"].offset == 18 and packed["pack0"].shape == (6 * len(outs),)
    assert packing.pack({"a": x}) == ({"a": x}, {})
    words = {f"u{i}": x.cast("uint32") for i in range(limits()["max_outputs"] + 1)}
    with pytest.raises(Exception, match="LIMIT.*cannot be packed.*uint32"):
        packing.pack(words)
