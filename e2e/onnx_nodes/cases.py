"""ONNX's own node tests as gpulab cases, derived offline from the installed `onnx` wheel.

`onnx.backend.test.case.node.collect_testcases()` builds every node test (model + data set)
in memory; nothing is vendored, so the list is the wheel's (onnx 1.23: 1,884 cases). Each case
is loaded by gpulab.onnx (the same Python code the page runs in Pyodide) with the test's input
shapes; inputs that a node needs known at load (Reshape's shape, Slice's starts, ...) are
given as `constants`. A case that loads becomes one protocol graph (plain JSON, the inputs'
data in it), which every lane runs; a case that does not load keeps its refusal message.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from gpulab.errors import GpuLabError
from gpulab.onnx import constant_inputs, load


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


def translate(tc) -> NodeCase:
    """One onnx TestCase as a NodeCase: loaded and lowered, or refused with the message."""
    model = tc.model
    case = NodeCase(tc.name, _ops_of(model), float(tc.rtol), float(tc.atol))
    inputs_data, outputs_data = tc.data_sets[0] if tc.data_sets else ([], [])
    in_names = [i.name for i in model.graph.input]
    out_names = [o.name for o in model.graph.output]
    case.expected = {n: v for n, v in zip(out_names, outputs_data) if isinstance(v, np.ndarray)}
    feeds = {n: v for n, v in zip(in_names, inputs_data)}
    raw = model.SerializeToString()
    try:
        shapes = {n: list(np.shape(v)) for n, v in feeds.items() if isinstance(v, np.ndarray)}
        known = constant_inputs(raw)
        consts = {n: feeds[n] for n in known if n in feeds}
        shapes = {k: v for k, v in shapes.items() if k not in consts}
        try:
            loaded = load(raw, input_shapes=shapes, constants=consts)
        except GpuLabError as err:
            if "hold_32bit=True" not in err.message:
                raise
            # a type gpulab holds in 32 bits only when asked: load again asking, and say so
            loaded = load(raw, input_shapes=shapes, constants=consts, hold_32bit=True)
            case.held = True
        case.graph = loaded.to_dict({s.name: feeds[s.name] for s in loaded.inputs})
    except GpuLabError as err:
        case.refusal = {"code": err.code, "message": err.message}
    except Exception as exc:  # noqa: BLE001 - recorded: the suite's test fails on any
        case.crash = f"{type(exc).__name__}: {exc}"
    return case


def translate_all(names: list[str] | None = None) -> list[NodeCase]:
    wanted = set(names) if names else None
    return [translate(tc) for tc in collect() if wanted is None or tc.name in wanted]
