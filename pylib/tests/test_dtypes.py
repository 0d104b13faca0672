"""Dtypes in the validator: data of every dtype in every accepted form (lists, array.array,
bytes, memoryview, numpy, base64), the generic result-dtype rule, and the JS twin giving the
same checked bytes for the same JSON (backends-js/test/dtypes.test.mjs tests the JS side)."""

from __future__ import annotations

import array
import json
import struct
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpulab.dtypes import (
    DTYPE_NUMPY,
    TYPECODE,
    decode_base64,
    encode_base64,
    result_dtype,
    to_base64_data,
)
from gpulab.errors import GpuLabError
from gpulab.protocol import to_float32_array, validate

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = {
    "float32": [1.5, -2.0, 0.003000000026077032],
    "int32": [-2147483648, 0, 2147483647],
    "uint32": [0, 7, 4294967295],
    "bool": [1, 0, 1],
}


def checked_data(dtype: str, data: Any, shape: tuple[int, ...] = (3,)) -> array.array:
    graph = {
        "version": 3,
        "nodes": [{"id": 0, "op": "input", "shape": list(shape), "dtype": dtype, "data": data}],
        "outputs": [{"name": "x", "id": 0}],
    }
    node = validate(graph).nodes[0]
    assert node.dtype == dtype
    assert isinstance(node.data, array.array) and node.data.typecode == TYPECODE[dtype]
    return node.data


@pytest.mark.parametrize("dtype", list(SAMPLES))
def test_every_form_gives_the_same_typed_buffer(dtype: str) -> None:
    values = SAMPLES[dtype]
    want = array.array(TYPECODE[dtype], values)
    kept = array.array(TYPECODE[dtype], values)
    assert checked_data(dtype, kept) is kept  # a buffer of the dtype is not copied
    assert checked_data(dtype, values) == want
    assert checked_data(dtype, tuple(values)) == want
    assert checked_data(dtype, want.tobytes()) == want
    assert checked_data(dtype, bytearray(want.tobytes())) == want
    assert checked_data(dtype, memoryview(want)) == want
    assert checked_data(dtype, memoryview(want.tobytes())) == want
    assert checked_data(dtype, np.array(values).astype(DTYPE_NUMPY[dtype])) == want
    assert checked_data(dtype, np.array(values, dtype=np.float64)) == want
    assert checked_data(dtype, to_base64_data(want)) == want


def test_conversions_between_types() -> None:
    assert checked_data("bool", [True, False, True]) == array.array("B", [1, 0, 1])
    assert checked_data("bool", np.array([True, False, True])) == array.array("B", [1, 0, 1])
    assert checked_data("int32", [1.0, 2, 3]) == array.array("i", [1, 2, 3])
    assert checked_data("int32", array.array("d", [1, -2, 3])) == array.array("i", [1, -2, 3])
    assert checked_data("uint32", memoryview(array.array("q", [1, 2, 3]))) == array.array(
        "I", [1, 2, 3]
    )
    assert checked_data("float32", np.arange(3, dtype=np.int64)) == array.array("f", [0, 1, 2])


@pytest.mark.parametrize(
    ("dtype", "data", "says"),
    [
        ("int32", np.array([1, 2.5, 3]), "data[1] = 2.5 is not an int32"),
        ("int32", array.array("f", [1, 2.5, 3]), "data[1] = 2.5 is not an int32"),
        ("uint32", np.array([1, -1, 3]), "data[1] = -1 is not a uint32"),
        ("int32", np.array([1, 2**31, 3]), "data[1] = 2147483648 is not an int32"),
        ("bool", np.array([1, 0, 2], dtype=np.uint8), "data[2] = 2 is not a bool"),
        ("bool", bytes([1, 0, 2]), "data[2] = 2 is not a bool"),
        ("bool", array.array("B", [1, 0, 9]), "data[2] = 9 is not a bool"),
        ("int32", np.array([np.nan, 1, 2]), "data[0] = NaN is not an int32"),
        ("int32", bytes(8), "data buffer holds 8 bytes, shape [3] of int32 needs 12"),
        ("int32", np.array([True, False, True]), "data has dtype bool, not an int32 type"),
        ("float32", object(), "data must be a list of numbers"),
    ],
)
def test_bad_buffers_are_refused_naming_the_node(dtype: str, data: Any, says: str) -> None:
    with pytest.raises(GpuLabError) as info:
        checked_data(dtype, data)
    assert info.value.code == "VALIDATION" and info.value.node == 0
    assert info.value.message.startswith("node 0 (input): ")
    assert says in info.value.message


def test_to_float32_array_keeps_its_contract() -> None:
    assert to_float32_array([1, "nan", 2], "x").tolist()[0] == 1.0
    assert to_float32_array(np.ones((2, 2)), "x") == array.array("f", [1, 1, 1, 1])
    assert to_float32_array(array.array("f", [1, 2]).tobytes(), "x") == array.array("f", [1, 2])
    with pytest.raises(GpuLabError, match="x: data"):
        to_float32_array(bytes(3), "x")


def test_base64_is_strict_and_round_trips() -> None:
    raw = bytes(range(256))
    assert decode_base64(encode_base64(raw)) == raw
    assert encode_base64(struct.pack("<i", 1)) == "AQAAAA=="
    for bad in ["AQAAAA", "AQ=AAA==", "AQAA AA=", "AQAAA===", "AQ-_AA=="]:
        assert decode_base64(bad) is None, bad


def test_the_result_dtype_rule() -> None:
    row = {
        "operands": ["a", "b"],
        "types": {"T": ["float32", "int32"]},
        "operand_types": {"a": "T", "b": "T"},
        "result_type": "int32",
    }
    where = "node 5 (argmax)"
    assert result_dtype(where, 5, row, ["float32", "float32"], {}) == "int32"
    assert result_dtype(where, 5, {**row, "result_type": "T"}, ["int32", "int32"], {}) == "int32"
    cases = [
        (row, ["bool", "bool"], "node 5 (argmax): operand a must be float32 or int32, got bool"),
        (
            row,
            ["float32", "int32"],
            "node 5 (argmax): operand b must be float32 like operand a, got int32",
        ),
        (
            {**row, "operand_types": {"a": "T", "b": "uint32"}},
            ["int32", "int32"],
            "node 5 (argmax): operand b must be uint32, got int32",
        ),
    ]
    for spec, dtypes, message in cases:
        with pytest.raises(GpuLabError) as info:
            result_dtype(where, 5, spec, dtypes, {})
        assert (info.value.code, info.value.node, info.value.message) == ("VALIDATION", 5, message)


JS_CHECKED_BYTES = """
import { validateGraph } from './backends-js/src/validate.mjs';
import { toBase64Data } from './backends-js/src/dtypes.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const out = JSON.parse(text).map((g) => {
  const c = validateGraph(g);
  return c.nodes.map((n) => [n.dtype, n.data ? toBase64Data(n.data).base64 : null]);
});
process.stdout.write(JSON.stringify(out));
"""


def test_both_validators_check_the_same_json_to_the_same_bytes() -> None:
    graphs = []
    for dtype, values in SAMPLES.items():
        packed = array.array(TYPECODE[dtype], values)
        nodes = [
            {"id": 0, "op": "input", "shape": [3], "dtype": dtype, "data": values},
            {"id": 1, "op": "input", "shape": [3], "dtype": dtype, "data": to_base64_data(packed)},
            {
                "id": 2,
                "op": "input",
                "shape": [1, 3],
                "dtype": dtype,
                "data": {"base64": encode_base64(packed.tobytes())},
            },
        ]
        graphs.append({"version": 3, "nodes": nodes, "outputs": [{"name": "x", "id": 0}]})
    done = subprocess.run(
        ["node", "--input-type=module", "-e", JS_CHECKED_BYTES],
        cwd=ROOT,
        input=json.dumps(graphs),
        capture_output=True,
        text=True,
        check=True,
    )
    js = json.loads(done.stdout)
    py = [
        [
            [n.dtype, encode_base64(n.data) if n.data is not None else None]
            for n in validate(g).nodes
        ]
        for g in graphs
    ]
    assert py == js
    for per_graph in py:  # the list and both base64 forms agree within each graph too
        assert len({b for _, b in per_graph}) == 1


JS_RESULT_DTYPES = """
import { resultDtype } from './backends-js/src/dtypes.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const out = JSON.parse(text).map(([spec, dtypes]) => {
  try {
    return ['ok', resultDtype({ id: 7, op: 'gather', attrs: { dtype: 'bool' } }, spec, dtypes)];
  } catch (err) {
    return [err.code, err.node, err.message];
  }
});
process.stdout.write(JSON.stringify(out));
"""

# Rows no op of today's table has: an operand that must be int32 (v4's gather/index_select
# indices), as a literal dtype and as a type variable, beside a float-or-int data operand.
INT_ONLY_ROWS = [
    {
        "operands": ["a", "i"],
        "types": {"T": ["float32", "int32"]},
        "operand_types": {"a": "T", "i": "int32"},
        "result_type": "T",
    },
    {
        "operands": ["a", "i"],
        "types": {"T": ["float32"], "I": ["int32"]},
        "operand_types": {"a": "T", "i": "I"},
        "result_type": "I",
    },
    {
        "operands": ["i"],
        "types": {"I": ["int32", "uint32"]},
        "operand_types": {"i": "I"},
        "result_type": "attr:dtype",
    },
]


def test_both_validators_refuse_float32_where_int32_is_required_alike() -> None:
    """The generic dtype rule, JS against Python, on rows with int32-only operands: a float32
    operand where int32 is required (and every other dtype mix) gets the same answer."""
    names = ["float32", "int32", "uint32", "bool"]
    cases = [
        (row, [a, b][: len(row["operands"])]) for row in INT_ONLY_ROWS for a in names for b in names
    ]
    done = subprocess.run(
        ["node", "--input-type=module", "-e", JS_RESULT_DTYPES],
        cwd=ROOT,
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
    )
    js = json.loads(done.stdout)
    py = []
    for row, dtypes in cases:
        try:
            py.append(["ok", result_dtype("node 7 (gather)", 7, row, dtypes, {"dtype": "bool"})])
        except GpuLabError as err:
            py.append([err.code, err.node, err.message])
    assert py == js
    refused = dict(zip(((i, tuple(d)) for i, (_, d) in enumerate(cases)), py))
    assert refused[(0, ("float32", "float32"))] == [
        "VALIDATION",
        7,
        "node 7 (gather): operand i must be int32, got float32",
    ]
    assert refused[(4, ("int32", "float32"))] == [
        "VALIDATION",
        7,
        "node 7 (gather): operand i must be int32, got float32",
    ]
    assert sum(r[0] == "ok" for r in py) < len(py)  # the grid has refusals and acceptances
    assert any(r[0] == "ok" for r in py)
