"""ONNX's own node tests as gpulab cases, derived offline from the installed `onnx` wheel
(`gpulab conformance --suite onnx-node`, and `python -m e2e.onnx_nodes` with its own report).

`onnx.backend.test.case.node.collect_testcases()` builds every node test (model + data set)
in memory; nothing is vendored, so the list is the wheel's (onnx 1.23: 1,884 cases). Each case
is loaded by gpulab.onnx (the same Python code the page runs in Pyodide) with the test's input
shapes, twice over:

- strict (as ONNX's backend tests and ONNX Runtime define it): the model as given, every graph
  input fed at run time. This is the count that matters.
- bound: inputs that a node needs known at load (Reshape's shape, Slice's starts, ...) are
  given as `constants` first, so more cases load; counted in a column of its own.

Where no input is bound the two are one load and one graph. A case that loads becomes a
protocol graph (plain JSON, the inputs' data in it), which every lane runs; a case that does
not load keeps its refusal message (the strict one apart).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from gpulab.errors import GpuLabError
from gpulab.onnx import constant_inputs, load

from .executors import RawResult
from .runner import CaseResult


@dataclass
class NodeCase:
    name: str
    ops: list[str]  # the op types of the model's nodes (a case counts for each)
    rtol: float
    atol: float
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    graph: dict | None = None  # the protocol graph, when the model loads
    refusal: dict | None = None  # {code, message} when it does not
    held: bool = False  # loaded with hold_32bit=True (DOUBLE/FLOAT16/... held in 32 bits)
    bound: list[str] = field(default_factory=list)  # inputs given as constants at load
    # strict: with nothing bound, `graph` is the strict graph too; with inputs bound, the graph
    # of the model loaded as given (None when refused: strict_refusal says why)
    strict_graph: dict | None = None
    strict_refusal: dict | None = None
    crash: str | None = None  # anything but a GpuLabError (a bug: the test asserts none)


def collect() -> list:
    """onnx's TestCase list (kind 'node'), sorted by name."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return sorted((c for c in cases if c.kind == "node"), key=lambda c: c.name)


def _ops_of(model) -> list[str]:
    ops = []
    for node in model.graph.node:
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"
        if key not in ops:
            ops.append(key)
    return ops or ["(none)"]


def _array(value):
    """A test datum as numpy where onnx gives a TensorProto (the cast tests' special types)."""
    import onnx

    if isinstance(value, onnx.TensorProto):
        try:
            return onnx.numpy_helper.to_array(value)
        except Exception:  # noqa: BLE001 - a type numpy cannot hold stays as it is
            return value
    return value


def translate(tc) -> NodeCase:
    """One onnx TestCase as a NodeCase: loaded and lowered, or refused with the message."""
    model = tc.model
    case = NodeCase(tc.name, _ops_of(model), float(tc.rtol), float(tc.atol))
    inputs_data, outputs_data = tc.data_sets[0] if tc.data_sets else ([], [])
    inputs_data, outputs_data = [_array(v) for v in inputs_data], [_array(v) for v in outputs_data]
    in_names = [i.name for i in model.graph.input]
    out_names = [o.name for o in model.graph.output]
    case.expected = {n: v for n, v in zip(out_names, outputs_data) if isinstance(v, np.ndarray)}
    feeds = {n: v for n, v in zip(in_names, inputs_data)}
    raw = model.SerializeToString()
    try:
        shapes = {n: list(np.shape(v)) for n, v in feeds.items() if isinstance(v, np.ndarray)}
        known = constant_inputs(raw)
        consts = {n: feeds[n] for n in known if n in feeds}
        case.bound = sorted(consts)
        bound_shapes = {k: v for k, v in shapes.items() if k not in consts}
        case.graph, case.held = _graph(raw, bound_shapes, consts, feeds)
    except GpuLabError as err:
        case.refusal = {"code": err.code, "message": err.message}
    except Exception as exc:  # noqa: BLE001 - recorded: the suite's test fails on any
        case.crash = f"{type(exc).__name__}: {exc}"
        return case
    if not case.bound:
        case.strict_refusal = case.refusal
        return case
    try:
        case.strict_graph, _ = _graph(raw, shapes, {}, feeds)
    except GpuLabError as err:
        case.strict_refusal = {"code": err.code, "message": err.message}
    except Exception as exc:  # noqa: BLE001 - recorded as for the bound load
        case.crash = f"strict: {type(exc).__name__}: {exc}"
    return case


def _graph(
    raw: bytes, shapes: dict[str, list[int]], consts: dict, feeds: dict
) -> tuple[dict, bool]:
    """(the protocol graph with the feeds in it, whether it was loaded with hold_32bit)."""
    held = False
    try:
        loaded = load(raw, input_shapes=shapes, constants=consts)
    except GpuLabError as err:
        if "hold_32bit=True" not in err.message:
            raise
        # a type gpulab holds in 32 bits only when asked: load again asking, and say so
        loaded = load(raw, input_shapes=shapes, constants=consts, hold_32bit=True)
        held = True
    return loaded.to_dict({s.name: feeds[s.name] for s in loaded.inputs}), held


def strict_graph(case: NodeCase) -> dict | None:
    """The graph of the case loaded by the strict rule (the model as given, every input fed
    at run time), or None when that load is refused."""
    return case.strict_graph if case.bound else case.graph


def translate_all(names: list[str] | None = None) -> list[NodeCase]:
    """Every case (or the named ones), translated; the full list is made once per process
    (about 20 s: the suite command and the tests share it)."""
    if names:
        wanted = set(names)
        return [translate(tc) for tc in collect() if tc.name in wanted]
    return list(_all_cases())


@functools.lru_cache(maxsize=1)
def _all_cases() -> tuple[NodeCase, ...]:
    return tuple(translate(tc) for tc in collect())


def judge(case: NodeCase, outputs: dict[str, np.ndarray]) -> str:
    """'' when the outputs match the reference, else why not."""
    for name, ref in case.expected.items():
        if name not in outputs:
            return f"output {name!r} missing"
        got = np.asarray(outputs[name])
        ref = np.asarray(ref)
        if tuple(got.shape) != tuple(ref.shape):
            return f"{name}: shape {list(got.shape)}, expected {list(ref.shape)}"
        if ref.dtype.kind in "iub":
            if not np.array_equal(got.astype(np.int64), ref.astype(np.int64)):
                bad = int(np.argmax(got.astype(np.int64).ravel() != ref.astype(np.int64).ravel()))
                return f"{name}: element {bad} is {got.ravel()[bad]}, expected {ref.ravel()[bad]}"
            continue
        g64, r64 = got.astype(np.float64), ref.astype(np.float64)
        nan = np.isnan(r64)
        if not np.array_equal(nan, np.isnan(g64)):
            return f"{name}: NaN where the reference has none (or the other way)"
        with np.errstate(invalid="ignore"):
            ok = (g64 == r64) | (np.abs(g64 - r64) <= case.atol + case.rtol * np.abs(r64)) | nan
        if not ok.all():
            bad = int(np.argmax(~ok.ravel()))
            return (
                f"{name}: element {bad} is {g64.ravel()[bad]!r}, expected "
                f"{r64.ravel()[bad]!r} (rtol {case.rtol}, atol {case.atol})"
            )
    return ""


# -- the suite of `gpulab conformance --suite onnx-node` --------------------------------------


def load_suite() -> list[dict]:
    """The cases whose model loads without hold_32bit (their element types exact in gpulab),
    as conformance case dicts: the row is the model's first op."""
    out = []
    for c in translate_all():
        if c.graph is None or c.held:
            continue
        out.append({"name": c.name, "op": c.ops[0], "graph": c.graph, "expect": c})
    return out


def judge_suite(case: Mapping, raw: RawResult | None) -> CaseResult:
    node_case: NodeCase = case["expect"]
    if raw is None:
        return CaseResult(case["name"], case["op"], False, math.inf, "no result from executor")
    if raw.error is not None:
        message = f"{raw.error.get('code')}: {raw.error.get('message')}"
        return CaseResult(case["name"], case["op"], False, math.inf, message)
    why = judge(node_case, raw.outputs)
    return CaseResult(case["name"], case["op"], not why, 0.0 if not why else math.inf, why or None)
