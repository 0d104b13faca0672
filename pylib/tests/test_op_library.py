"""The op library (gpulab.functional): each op once, with the names it has in every frontend.

Driven by the declarations: every entry with a gpulab.torch name matches PyTorch in float64
(values and gradients, through gpulab.torch's function, module and method forms), every
declared aten overload lowers whole through torch.compile(backend="gpulab") (strict) and
matches eager, every declared ONNX operator matches onnx.reference, and every declared name
exists in the real frontend. An entry without cases here fails `test_every_entry_has_cases`:
adding an op is its declaration plus its cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import gpulab.torch as gt
import numpy as np
import pytest
import torch
from gpulab import GpuLabError, Graph, host
from gpulab import functional as F
from gpulab.functional import library

TF = torch.nn.functional

# entry -> keyword sets its gpulab.torch / aten tests run (the function's own keywords)
CASES: dict[str, list[dict[str, Any]]] = {
    "log1p": [{}],
    "expm1": [{}],
    "relu": [{}],
    "sigmoid": [{}],
    "tanh": [{}],
    "gelu": [{}, {"approximate": "tanh"}],
    "leaky_relu": [{}, {"negative_slope": 0.2}],
    "threshold": [{"threshold": 0.5, "value": -1.0}, {"threshold": -3.0, "value": 2.0}],
    "elu": [{}, {"alpha": 0.5}],
    "celu": [{}, {"alpha": 0.5}],
    "selu": [{}],
    "hardsigmoid": [{}],
    "hardswish": [{}],
    "softsign": [{}],
    "mish": [{}],
    "softplus": [{}, {"beta": 2.0}, {"beta": 0.5, "threshold": 5.0}],
    "hardshrink": [{}, {"lambd": 3.0}],
    "silu": [{}],
    "hardtanh": [{}, {"min_val": -0.5, "max_val": 3.0}],
    "relu6": [{}],
    "sinh": [{}],
    "cosh": [{}],
    "asinh": [{}],
    "acosh": [{}],
    "trunc": [{}],
    "floor": [{}],
    "ceil": [{}],
    "cumsum": [{"dim": 0}],
}
# ONNX op type -> attribute sets its onnx.reference test runs
ONNX_CASES: dict[str, list[dict[str, Any]]] = {
    "Relu": [{}],
    "Sigmoid": [{}],
    "Tanh": [{}],
    "Gelu": [{}, {"approximate": "tanh"}],
    "LeakyRelu": [{}, {"alpha": 0.2}],
    "ThresholdedRelu": [{}, {"alpha": -0.5}],
    "Elu": [{}, {"alpha": 0.5}],
    "Celu": [{}, {"alpha": 0.5}],
    "Selu": [{}, {"alpha": 1.5, "gamma": 2.0}],
    "HardSigmoid": [{}, {"alpha": 0.3, "beta": 0.4}],
    "HardSwish": [{}],
    "Softsign": [{}],
    "Softplus": [{}],
    "Mish": [{}],
    "Shrink": [{}, {"lambd": 1.0, "bias": 0.25}],
    "Swish": [{}, {"alpha": 1.5}],
    "Sinh": [{}],
    "Cosh": [{}],
    "Asinh": [{}],
    "Acosh": [{}],
    "Atanh": [{}],
    "Floor": [{}],
    "Ceil": [{}],
    "Round": [{}],
}
# entries the frontends reach only as the backward of another (their cases: that one's)
BACKWARD_OF = {"gelu_grad": "gelu", "threshold_grad": "relu", "hardtanh_grad": "hardtanh"}
# declared aten overloads dynamo does not emit for these calls (each still lowers if met)
NOT_TRACED = {"aten.selu.default": "F.selu traces to aten.elu(x, alpha, scale)"}
# entries whose torch name traces to an aten op the compile backend leaves unmapped on purpose
NOT_LOWERED = {"cumsum": "aten.cumsum stays unmapped: test_torch_backend.py's graph breaks"}
# x domains other than the real line
DOMAINS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "log1p": lambda x: abs(x) * 0.9 - 0.9,  # (-1, inf); numpy arrays and torch tensors
    "acosh": lambda x: abs(x) + 1.000001,  # (1, inf): 1 itself has an infinite slope
    "Acosh": lambda x: abs(x) + 1.000001,
    "Atanh": lambda x: x / (abs(x) + 1.0),  # (-1, 1)
}
EDGES = [-30, -20, -8, -3.5, -3, -1, -0.5, -1e-3, -1e-8, 0, 1e-8, 1e-3, 0.5, 1, 3, 3.5, 8, 20]


def _x(name: str) -> np.ndarray:
    rng = np.random.default_rng(len(name))
    x = np.concatenate([EDGES, rng.standard_normal(30) * 2.0]).astype(np.float32)
    return DOMAINS.get(name, lambda v: v)(x).astype(np.float32)


def _torch_entries() -> list[library.Entry]:
    return [e for e in F.entries() if e.torch or e.method or e.functional]


@pytest.fixture(autouse=True)
def cpu() -> Iterator[None]:
    gt.set_backend("cpu-python")
    yield
    gt.set_backend(None)


def _call(module: Any, entry: library.Entry, x: Any, kw: dict[str, Any]) -> Any:
    """The entry through one of its gpulab.torch (or torch) forms: F.x, torch.x or Tensor.x."""
    if entry.functional:
        return getattr(module.nn.functional, entry.functional[0])(x, **kw)
    if entry.torch:
        return getattr(module, entry.torch[0])(x, **kw)
    return getattr(x, entry.method[0])(**kw)


def _close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float, what: str) -> None:
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


# -- the declarations ---------------------------------------------------------------------------


def test_every_entry_has_cases() -> None:
    """A new entry comes with its cases (the tests below are driven by these tables)."""
    torch_names = {e.name for e in _torch_entries()} | {
        e.name for e in F.entries() if e.aten and e.name not in BACKWARD_OF
    }
    assert sorted(torch_names - set(CASES)) == [], "add the entry's CASES"
    assert sorted(set(CASES) - torch_names) == [], "CASES of an entry no torch name reaches"
    assert sorted(set(F.onnx_names()) - set(ONNX_CASES)) == [], "add the operator's ONNX_CASES"
    assert all(BACKWARD_OF[e.name] in CASES for e in F.entries() if e.name in BACKWARD_OF)


def test_every_declared_name_exists_in_the_real_frontend() -> None:
    import onnx.defs

    for e in F.entries():
        for name in e.torch:
            assert hasattr(torch, name), f"torch.{name} ({e.name})"
        for name in e.method:
            assert hasattr(torch.Tensor, name), f"Tensor.{name} ({e.name})"
        for name in e.functional:
            assert hasattr(TF, name), f"torch.nn.functional.{name} ({e.name})"
        for name in e.nn:
            assert isinstance(getattr(torch.nn, name, None), type), f"torch.nn.{name}"
        for name in e.aten:
            packet, _, variant = name.partition(".")
            assert hasattr(getattr(torch.ops.aten, packet), variant), f"aten.{name}"
        for spec in e.onnx:
            schema = onnx.defs.get_schema(spec.op_type, spec.since, "")
            assert schema.since_version <= spec.since, (spec.op_type, schema.since_version)
            assert set(spec.attrs) <= set(schema.attributes), (spec.op_type, spec.attrs)


def test_a_name_is_declared_once() -> None:
    def fn(x: Any) -> Any:
        return x

    for clash in (
        {"functional": "relu"},
        {"aten": "relu.default"},
        {"onnx": library.onnx("Relu", since=14)},
    ):
        fn.__name__ = "relu_again"
        with pytest.raises(ValueError, match="already belong|overlap"):
            library.declare(**clash)(fn)
    with pytest.raises(ValueError, match="declared twice"):
        library.declare()(F.relu)
    assert "relu_again" not in library.ENTRIES
    fn.__name__ = "early_relu"  # another opset range of the same operator is fine
    library.declare(onnx=library.onnx("Relu", since=1, until=5))(fn)
    try:
        assert [s.opsets() for s, _ in F.onnx_names()["Relu"]] == ["1-5", "6+"]
    finally:
        del library.ENTRIES["early_relu"]


def test_the_frontends_read_the_declarations() -> None:
    """Each frontend's surface holds exactly the declared names (and parsers only of them)."""
    import gpulab.torch._library as tl
    import gpulab.torch_backend.table as tb
    from gpulab.onnx.declared import DECLARED_OPS
    from gpulab.onnx.ops import OPS

    for e in F.entries():
        for name in e.functional:
            assert getattr(gt.nn.functional, name).__name__ == name
        for name in e.torch:
            assert getattr(gt, name).__name__ == name
        for name in e.method:
            assert getattr(gt.Tensor, name).__name__ == name
        for name in e.nn:
            assert getattr(gt.nn, name).__name__ == name
        for name in e.aten:
            assert tb.DECLARED[tb.overload(name)] == e.name
        for spec in e.onnx:
            assert OPS[spec.op_type] is DECLARED_OPS[spec.op_type]
    assert tl.unused_parsers() == []
    assert set(tb.PARSERS) <= set(tb.DECLARED)
    from gpulab.torch._refuse import supported

    assert {"elu", "hardswish"} <= set(supported("nn.functional"))
    assert {"ELU", "Mish"} <= set(supported("nn"))
    with pytest.raises(gt.Unsupported, match="supported: .*hardswish"):
        gt.nn.functional.no_such_activation  # noqa: B018


# -- gpulab.torch against PyTorch in float64 ----------------------------------------------------


@pytest.mark.parametrize("name,kw", [(n, kw) for n, cases in CASES.items() for kw in cases])
def test_torch_forms_match_float64_torch(name: str, kw: dict[str, Any]) -> None:
    entry = library.ENTRIES[name]
    x = _x(name)
    w = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    ours = gt.tensor(x.tolist(), requires_grad=True)
    y = _call(gt, entry, ours, kw)
    (y * gt.tensor(w.tolist())).sum().backward()
    ref = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    want = _call(torch, entry, ref, kw)
    (want * torch.tensor(w, dtype=torch.float64)).sum().backward()
    what = f"{name}({kw}) at x = {x.tolist()}"
    _close(np.array(y.tolist()), want.detach().numpy(), 2e-6, 2e-7, what)
    _close(np.array(ours.grad.tolist()), ref.grad.numpy(), 1e-5, 1e-6, what + " (gradient)")


@pytest.mark.parametrize("name", sorted({n for e in F.entries() for n in e.nn}))
def test_modules_call_their_function(name: str) -> None:
    entry = library.by_name("nn")[name]
    kw = CASES[entry.name][-1]
    x = gt.tensor(_x(entry.name).tolist())
    module = getattr(gt.nn, name)(**kw)
    want = getattr(torch.nn, name)(**kw)
    assert all(getattr(module, k) == v for k, v in kw.items())
    got = module(x).tolist()
    np.testing.assert_allclose(
        got, want(torch.tensor(_x(entry.name))).numpy(), rtol=2e-6, atol=2e-7
    )
    if entry.inplace:
        y = gt.tensor(_x(entry.name).tolist())
        out = getattr(gt.nn, name)(**kw, inplace=True)(y)
        assert out is y and y.tolist() == got  # torch writes into the input: so do we
    with pytest.raises(TypeError, match=f"nn.{name}"):
        getattr(gt.nn, name)(**kw, no_such_keyword=1)


def test_relu_keeps_an_integer_dtype() -> None:
    i = gt.tensor([-2, 0, 3])
    for y in (gt.relu(i), i.relu(), gt.nn.functional.relu(i), gt.nn.ReLU()(i)):
        assert y.dtype is gt.int64 and y.tolist() == [0, 0, 3]


def test_careful_numerics_keep_their_relative_accuracy_on_cpu_and_wgpu() -> None:
    """softplus(-20) is 2.06e-9 (log(1 + exp(-20)) rounds to 0 in float32), log1p(1e-8) is
    1e-8 (log(1 + 1e-8) is 0), expm1(1e-8) is 1e-8 (exp(1e-8) - 1 is 0): each within a few
    float32 ulps relative of float64, on cpu-python and on wgpu (lavapipe here)."""
    points = {
        "softplus": [-87.0, -50.0, -30.0, -20.0, -5.0, 0.0, 1e-3, 15.0, 19.5],
        "log1p": [1e-8, -1e-6, 1e-5, 0.3, -0.25, 0.5, 3.0, -0.999],
        "expm1": [1e-8, -1e-6, 1e-5, 0.3, -0.45, 0.6, -3.0, 20.0],
    }
    exact = {
        "softplus": lambda v: np.logaddexp(0.0, v),
        "log1p": np.log1p,
        "expm1": np.expm1,
    }
    g = Graph()
    outs = {name: getattr(F, name)(g.tensor(np.float32(v).tolist())) for name, v in points.items()}
    graph = g._graph_dict(outs)
    for backend in ("cpu-python", "wgpu"):
        run = host.execute(graph, backend=backend, allow_software=True, strict=True)
        for name, v in points.items():
            want = exact[name](np.float64(np.float32(v)))
            got = np.asarray(run["outputs"][name]["array"], np.float64)
            rel = np.abs(got - want) / np.abs(want)
            assert rel.max() < 6e-7, (backend, name, dict(zip(v, rel.tolist(), strict=True)))


# -- torch.compile: every declared aten overload, lowered whole --------------------------------


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_aten_overloads_lower_whole_and_match_eager() -> None:
    """One compiled module calls every entry with a torch name (and so, in its backward, the
    entries aten reaches as backward ops); strict: every aten op must lower, none runs eager."""
    import gpulab.torch_backend as tb

    entries = [e for e in _torch_entries() if e.name not in NOT_LOWERED]
    calls = [(e, kw) for e in entries for kw in CASES[e.name]]

    class Every(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
            return [_call(torch, e, DOMAINS.get(e.name, lambda v: v)(x), kw) for e, kw in calls]

    x0 = _x("all")
    x = torch.tensor(x0, requires_grad=True)
    ref = torch.tensor(x0, requires_grad=True)
    compiled = torch.compile(
        Every(), backend="gpulab", options={"backend": "cpu-python", "strict": True}
    )
    out, want = compiled(x), Every()(ref)
    cots = [torch.randn_like(w) for w in want]
    sum((o * c).sum() for o, c in zip(out, cots, strict=True)).backward()
    sum((w * c).sum() for w, c in zip(want, cots, strict=True)).backward()
    for (e, kw), o, w in zip(calls, out, want, strict=True):
        torch.testing.assert_close(o, w, rtol=2e-6, atol=2e-6, msg=f"{e.name}({kw})")
    torch.testing.assert_close(x.grad, ref.grad, rtol=1e-5, atol=1e-5)
    found = tb.explain(Every(), torch.tensor(x0, requires_grad=True), show=False)
    assert found.unmapped == {}
    declared = {f"aten.{n}" for e in F.entries() for n in e.aten}
    lowered = {op for g in found.graphs for op in g.ops} & declared
    missing = {f"aten.{n}" for e in _torch_entries() for n in e.aten} - lowered
    assert missing == set(NOT_TRACED), f"declared but never met in the traced graphs: {missing}"


# -- ONNX: every declared operator against onnx.reference --------------------------------------


def _onnx_model(op_type: str, attrs: dict[str, Any], opset: int) -> bytes:
    from onnx import TensorProto, helper

    node = helper.make_node(op_type, ["x"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "t",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(_x(op_type))])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(_x(op_type))])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model.SerializeToString()


@pytest.mark.parametrize(
    "op_type,attrs", [(op, a) for op, cases in ONNX_CASES.items() for a in cases]
)
def test_onnx_operators_match_the_reference(op_type: str, attrs: dict[str, Any]) -> None:
    import gpulab.onnx as gonnx
    from onnx.reference import ReferenceEvaluator

    (spec, _), *_ = F.onnx_names()[op_type]
    raw = _onnx_model(op_type, attrs, max(spec.since, 13))
    x = _x(op_type)
    (want,) = ReferenceEvaluator(raw).run(None, {"x": x})
    got = gonnx.load(raw).run({"x": x}, backend="cpu-python")["y"]["array"]
    _close(np.asarray(got), want, 1e-5, 1e-6, f"{op_type}({attrs})")


def test_onnx_refuses_an_operator_before_its_opset_and_a_mistyped_attribute() -> None:
    import gpulab.onnx as gonnx

    with pytest.raises(GpuLabError, match="HardSwish exists from opset 14") as info:
        gonnx.load(_onnx_model("HardSwish", {}, 13))
    assert info.value.code == "VALIDATION"
    with pytest.raises(
        GpuLabError, match="attribute 'alpha' must be of type FLOAT, is STRING"
    ) as info:
        gonnx.load(_onnx_model("Elu", {"alpha": "big"}, 13))
    assert info.value.code == "VALIDATION"
    with pytest.raises(GpuLabError, match=r"onnx: node 0 \(Gelu\): gelu: approximate"):
        gonnx.load(_onnx_model("Gelu", {"approximate": "erf"}, 20))


def test_onnx_softplus_is_the_careful_one() -> None:
    """ONNX's Softplus is the library's: its -20 is 2.06e-9, not log(1 + exp(-20)) = 0."""
    import gpulab.onnx as gonnx

    out = gonnx.load(_onnx_model("Softplus", {}, 13)).run({"x": _x("Softplus")}, "cpu-python")
    at = EDGES.index(-20)
    assert math.isclose(out["y"]["array"][at], math.log1p(math.exp(-20)), rel_tol=1e-6)
