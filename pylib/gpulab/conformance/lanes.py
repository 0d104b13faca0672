"""The per-lane expectation list, `lanes.json`: which ops (or op:dtype) a backend lane is expected
not to have a kernel for yet, each with a reason (as ORT Web's suite-test-list.jsonc and
TF.js's TEST_FILTERS). On a listed lane a case using such an op must be refused with
UNSUPPORTED; that refusal is the case's expected result. Everywhere else it must match the
reference.

    {"webgl2": {"abs": "GLSL arm not written yet", "argmax:int32": "no int32 textures"}}

A key is a backend lane (`cpu`, `wasm`, `webgl2`, `webgpu`, `cpu-python`, `wgpu`), shared by the
executors that run that backend (node-cpu and browser-cpu are both lane `cpu`). An entry `op`
covers every dtype, `op:dtype` one dtype: the dtype the kernel is chosen by, as
backends-js/src/kernels.mjs `kernelDtype` says (the result's where the result has the op's type
variable or there is no operand, else the first operand's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from ..errors import GpuLabError
from ..protocol import validate
from .reference import OP_TABLE, operand_ids

LANES_PATH = Path(__file__).with_name("lanes.json")

Lanes = dict[str, dict[str, str]]


def load_lanes(source: Path | str | Mapping | None = None) -> Lanes:
    """lanes.json (or another file, or an already-loaded mapping), checked for shape and ops."""
    if source is None or isinstance(source, str | Path):
        data = json.loads(Path(source or LANES_PATH).read_text())
    else:
        data = source
    lanes: Lanes = {}
    for lane, entries in dict(data).items():
        if not isinstance(entries, Mapping):
            raise TypeError(f"lanes.json: lane {lane!r} must map entries to reasons")
        for entry, reason in entries.items():
            op, _, dtype = entry.partition(":")
            if op not in OP_TABLE["ops"]:
                raise ValueError(f"lanes.json {lane}: {entry!r} is not an op of the table")
            if dtype and dtype not in OP_TABLE["dtypes"]:
                raise ValueError(f"lanes.json {lane}: {entry!r} names an unknown dtype")
            if not isinstance(reason, str) or not reason.strip():
                raise ValueError(f"lanes.json {lane}: {entry!r} needs a reason")
        lanes[lane] = {str(k): str(v) for k, v in entries.items()}
    return lanes


def node_dtypes(graph: Mapping) -> dict[int, str]:
    """Each node's result dtype from the op table's result_type (float32 where none is said)."""
    by_id = {n["id"]: n for n in graph["nodes"]}
    out: dict[int, str] = {}

    def dtype_of(node_id: int) -> str:
        stack = [node_id]
        while stack:  # operands first, without recursion (chains are long)
            nid = stack[-1]
            pending = [i for i in operand_ids(by_id[nid]) if i not in out and i in by_id]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            out[nid] = _result_dtype(by_id[nid], out)
        return out[node_id]

    for nid in by_id:
        dtype_of(nid)
    return out


def _result_dtype(node: Mapping, known: Mapping[int, str]) -> str:
    spec = OP_TABLE["ops"][node["op"]]
    rule = spec.get("result_type", "float32")
    if rule.startswith("attr:"):
        attr = rule[5:]
        return node.get(attr) or spec["attrs"].get(attr, {}).get("default") or "float32"
    if rule not in spec.get("types", {}):
        return rule
    ids = operand_ids(node)
    listed = len(ids) - len(spec["operands"])  # a variadic list field comes first
    names = [spec.get("variadic")] * listed + list(spec["operands"])
    for name, operand in zip(names, ids, strict=True):
        if spec["operand_types"].get(name) == rule:
            return known.get(operand, "float32")
    return "float32"


def kernel_dtype(node: Mapping, dtypes: Mapping[int, str]) -> str:
    """The dtype a backend's kernel for this node is chosen by (kernels.mjs kernelDtype)."""
    spec = OP_TABLE["ops"][node["op"]]
    operands = operand_ids(node)
    if spec.get("result_type") in spec.get("types", {}) or not operands:
        return dtypes[node["id"]]
    return dtypes[operands[0]]


def listed_entry(graph: Mapping, entries: Mapping[str, str]) -> tuple[str, str] | None:
    """The first (entry, reason) of a lane's list that a node of the graph falls under."""
    if not entries:
        return None
    dtypes = node_dtypes(graph)
    answered = _answered_without_kernel(graph)
    for node in graph["nodes"]:
        if node["id"] in answered:
            continue
        at = f"{node['op']}:{kernel_dtype(node, dtypes)}"
        for entry in (node["op"], at):
            if entry in entries:
                return entry, entries[entry]
    return None


def _answered_without_kernel(graph: Mapping) -> set[int]:
    """The nodes no backend runs a kernel for: a zero-size one, and one that reads a zero-size
    operand (the lowering answers both; lowering.py and lowering.mjs), so a lane that lacks the
    op runs them anyway. A graph the validator refuses is judged on all its nodes."""
    try:
        checked = validate(graph)
    except GpuLabError:
        return set()
    by_id = checked.by_id
    return {
        n.id
        for n in checked.nodes
        if 0 in n.shape or any(0 in by_id[ref].shape for ref in n.operands)
    }
