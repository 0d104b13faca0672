"""The Python layers: no import cycle (lazy imports included), modules import alone in a fresh
interpreter, `SessionLike` is what both sessions offer, output entries keep data binary until
asked, and `Graph.op` / the table-made Tensor methods follow the op table."""

from __future__ import annotations

import ast
import inspect
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gpulab import GpuLabError, Graph, Tensor, optable
from gpulab.host import SessionLike
from gpulab.pyodide_bridge import BrowserSession
from gpulab.results import OutputEntry, buffer_entry, output_entry
from gpulab.session import Session

PACKAGE = Path(__file__).resolve().parents[1] / "gpulab"


def _module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """gpulab modules `module` imports anywhere (function-level imports too: a lazy import
    is a dependency all the same), its own parent packages left out."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(max(node.level - 1, 0)):
                base = base.rsplit(".", 1)[0]
            full = node.module if not node.level else ".".join(filter(None, [base, node.module]))
            targets = [full] + [f"{full}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {t for t in targets if t in known and t != module}
    # a module's own parent packages are imported before it anyway: not a dependency edge
    return {t for t in found if not module.startswith(t + ".")}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(u: str) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(edges[u]):
            if state.get(v) == 1:
                cycles.append(stack[stack.index(v) :] + [v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(edges):
        if u not in state:
            visit(u)
    return cycles


def _unit(module: str) -> str:
    """The layer unit of a module: a subpackage (gpulab.cpu, gpulab.native, ...) is one unit
    (inside it, a registry module may import the kernels that register themselves), every
    top-level module is its own."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_the_import_graph_has_no_cycle():
    known = _module_names()
    edges = {m: _imported(m, p, known) for m, p in known.items()}
    assert edges["gpulab.session"] >= {"gpulab.results"}, "the checker reads relative imports"
    assert "gpulab.host" not in edges["gpulab.session"]
    units: dict[str, set[str]] = {}
    for module, deps in edges.items():
        units.setdefault(_unit(module), set()).update(_unit(d) for d in deps)
    edges = {u: deps - {u} for u, deps in units.items()}
    assert _cycles(edges) == []
    # the checker finds a cycle where there is one (the host <-> session one it replaced)
    assert _cycles({**edges, "gpulab.session": edges["gpulab.session"] | {"gpulab.host"}})


def test_results_depends_only_on_the_dtype_table():
    known = _module_names()
    assert _imported("gpulab.results", known["gpulab.results"], known) == {"gpulab.dtypes"}


@pytest.mark.parametrize(
    "order",
    [
        ["gpulab.session", "gpulab.host"],  # the order that used to meet the cycle
        ["gpulab.results"],
        ["gpulab.executors"],
        ["gpulab.host", "gpulab.graph"],
        ["gpulab.pyodide_bridge", "gpulab.session"],
    ],
)
def test_modules_import_in_a_fresh_interpreter(order):
    code = (
        "; ".join(f"import {m}" for m in order) + "; import gpulab.session as s; "
        "s.Session; print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_both_sessions_offer_the_session_like_members():
    members = [name for name in dir(SessionLike) if not name.startswith("_")]
    assert {"run", "run_steps", "download", "dispose", "disposed"} <= set(members)
    for cls in (Session, BrowserSession):
        for name in ("run", "run_steps", "download", "dispose", "disposed"):
            assert hasattr(cls, name), f"{cls.__name__} lacks {name}"
        for name in ("run", "run_steps", "download"):
            mine = list(inspect.signature(getattr(cls, name)).parameters)
            assert len(mine) == len(inspect.signature(getattr(SessionLike, name)).parameters)


# ------------------------------------------------------------------------------ output entries


def test_output_entries_build_the_data_list_only_when_asked():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    entry = output_entry(arr, (2, 3))
    assert dict.__contains__(entry, "data") is False  # nothing converted yet
    assert "data" in entry and len(entry) == 4 and entry["array"] is not None
    assert entry["data"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert dict.__contains__(entry, "data")  # converted once, kept
    lazy = output_entry(arr, (2, 3))
    assert json.loads(json.dumps({k: v for k, v in lazy.items() if k != "array"}))["data"][5] == 5
    for view in (
        lambda e: e.get("data"),
        lambda e: list(e)[-1] and e["data"],
        lambda e: dict(e)["data"],
        lambda e: {**e}["data"],
        lambda e: e.copy()["data"],
        lambda e: pickle.loads(pickle.dumps(e))["data"],
    ):
        assert view(output_entry(arr, (2, 3)))[:2] == [0.0, 1.0]
    assert "'data': [0.0, 1.0" in repr(output_entry(arr, (2, 3)))
    assert (
        json.dumps(OutputEntry({"shape": [2]}, np.array([1, 2], np.int32)))
        == '{"shape": [2], "data": [1, 2]}'
    )
    with pytest.raises(KeyError):
        entry["nope"]
    written = output_entry(arr, (2, 3))
    written["data"] = "mine"  # a write before the first read is kept
    assert written["data"] == "mine" and len(written) == 4
    popped = output_entry(arr, (2, 3))
    assert popped.pop("data")[0] == 0.0 and "data" not in popped and len(popped) == 3


# ------------------------------------------------------------------------------ Graph.op


def test_graph_op_is_the_generic_builder():
    g = Graph()
    x = g.tensor([[1.0, -2.0], [3.0, 4.0]])
    t = g.op("softmax", a=x, axis=0)
    assert isinstance(t, Tensor) and t.shape == (2, 2) and t.op == "softmax"
    assert g.to_dict(o=t)["nodes"][-1] == {"id": t.id, "op": "softmax", "a": x.id, "axis": 0}
    s = g.op("add", a=x, b=2)  # a scalar operand becomes a full node, as with operators
    assert g.to_dict(o=s)["nodes"][-2]["op"] == "full"
    assert g.op("full", shape=[2], value=1.5).shape == (2,)
    for bad, words in [
        (lambda: g.op("nope", a=x), "unknown op 'nope'"),
        (lambda: g.op("add", a=x), "missing operand 'b'"),
        (lambda: g.op("relu", a=x, axis=1), "unknown attribute(s) ['axis']"),
        (lambda: g.op("sum", a=x, axis=5), "axis 5"),
    ]:
        with pytest.raises(GpuLabError) as info:
            bad()
        assert info.value.code == "VALIDATION" and words in info.value.message


def test_simple_family_methods_come_from_the_op_table():
    from gpulab.graph import GRAPH_LEVEL, METHOD_NAMES, TABLE_FAMILIES

    made = [
        op
        for op, row in optable.ops().items()
        if row["family"] in TABLE_FAMILIES and op not in GRAPH_LEVEL
    ]
    assert {"relu", "exp", "sum", "mean", "softmax", "add"} <= set(made)
    g = Graph()
    x = g.tensor([[1.0, 2.0], [3.0, 4.0]])
    for op in made:
        method = getattr(Tensor, METHOD_NAMES.get(op, op))
        row = optable.ops()[op]
        if "." not in method.__qualname__:  # made from the table (not hand-written in Tensor)
            assert row["doc"] in method.__doc__ and f"`{op}`" in method.__doc__
        params = list(inspect.signature(method).parameters)
        for attr in row["attrs"]:
            assert attr in params, (op, attr)
        args = [x] * (len(row["operands"]) - 1)
        t = method(x, *args)
        assert t.op == op, op
    with pytest.raises(TypeError) as info:
        x.sum(0, False, 3)
    assert "sum()" in str(info.value)


@pytest.mark.parametrize(
    "data",
    [
        [[1, -2], [3, 4]],
        np.array([[1, -2], [3, 4]], dtype=np.int32),
        np.array([[1, -2], [3, 4]], dtype=np.int64),
    ],
)
def test_tensors_of_other_dtypes_are_checked_as_they_are_recorded(data):
    g = Graph()
    t = g.tensor(data, dtype="int32")
    assert t.shape == (2, 2) and t.dtype == "int32" and "int32" in repr(t)
    d = g.to_dict(o=t)
    assert d["version"] == 3 and d["nodes"][0]["dtype"] == "int32"
    assert d["nodes"][0]["data"] == [1, -2, 3, 4]
    with pytest.raises(GpuLabError) as info:
        t.relu()  # refused at the line that records it, as the validators would
    assert (
        info.value.code == "VALIDATION"
        and "operand a must be float32, got int32" in info.value.message
    )


def test_buffers_of_other_dtypes_keep_their_bytes():
    import array as pyarray

    g = Graph()
    raw = pyarray.array("i", [5, -6, 7]).tobytes()
    assert g.tensor(raw, dtype="int32").shape == (3,)
    assert g.to_dict(o=g.tensor(pyarray.array("i", [5, -6, 7]), dtype="int32"))["nodes"][0][
        "data"
    ] == [5, -6, 7]
    assert g.tensor([True, False], dtype="bool").dtype == "bool"
    assert g.tensor([1.5, 2.5]).dtype == "float32"


def test_a_new_reduce_row_becomes_a_method_with_its_attrs(monkeypatch):
    """What the new ops get without a hand-written method: argmax's row (family custom,
    result int32) gives t.argmax(axis=None, keepdim=False, *, dim=None)."""
    from gpulab import graph

    row = {
        "since": 3,
        "family": "custom",
        "operands": ["a"],
        "types": {"T": ["float32"]},
        "operand_types": {"a": "T"},
        "result_type": "int32",
        "attrs": {
            "axis": {"type": "axis", "required": False, "default": None},
            "keepdim": {"type": "bool", "required": False, "default": False},
        },
        "shape_rule": "reduce",
        "tolerance": "exact",
        "features": {},
        "doc": "index of the max along axis",
    }
    monkeypatch.setitem(optable.ops(), "argmax", row)
    monkeypatch.setitem(
        optable.ops(), "reduce_max", {**row, "result_type": "T", "doc": "max along axis"}
    )

    class Probe(Tensor):
        __slots__ = ()

    graph._install_table_methods(Probe)
    assert str(inspect.signature(Probe.argmax)) == "(self, axis=None, keepdim=False, *, dim=None)"
    assert Probe.max.__name__ == "max" and "`reduce_max`" in Probe.max.__doc__
    g = Graph()
    x = g.tensor([[1.0, 5.0], [7.0, 2.0]])
    t = Probe.argmax(x, dim=-1, keepdim=True)
    assert (t.op, t.shape, t.dtype) == ("argmax", (2, 1), "int32")
    assert g.to_dict(o=t)["nodes"][-1] == {
        "id": t.id,
        "op": "argmax",
        "a": x.id,
        "axis": 1,
        "keepdim": True,
    }


def test_page_feeds_are_buffers_of_their_dtype():
    """What BrowserSession hands to_js for a feed: one buffer, never a list of numbers."""
    import array as pyarray

    from gpulab.pyodide_bridge import feed_buffer

    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    view = feed_buffer(strided)
    assert (
        isinstance(view, memoryview)
        and view.format == "f"
        and view.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    )
    packed = feed_buffer([[1, 2], [3, 4]], "int32")
    assert (
        isinstance(packed, pyarray.array)
        and packed.itemsize == 4
        and packed.tolist() == [1, 2, 3, 4]
    )
    own = pyarray.array("f", [1.0])
    assert feed_buffer(own) is own
    with pytest.raises(GpuLabError) as info:
        feed_buffer(["x"], "float32")
    assert info.value.code == "VALIDATION" and "float32" in info.value.message


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 0, 3), (2, 1, 2, 2)])
def test_output_tolist_nests_by_shape_as_numpy(shape: tuple[int, ...]) -> None:
    """result["outputs"][name].tolist(): the values nested by shape, native and page entries
    alike (the notebook's observed defect 9, `issues show 12`); `data` stays flat."""
    import array

    arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    assert output_entry(arr, shape).tolist() == arr.tolist()
    page = buffer_entry(array.array("f", arr.reshape(-1).tolist()), list(shape), "float32")
    assert page.tolist() == arr.tolist()
    assert page["data"] == arr.reshape(-1).tolist()
