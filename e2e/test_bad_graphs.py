"""Every graph of pylib/gpulab/conformance/bad_graphs.json is refused by gpulab.protocol.validate with
the table's code, naming the table's node (the JS twin: backends-js/test/bad-graphs.test.mjs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpulab.errors import GpuLabError
from gpulab.protocol import validate

ROWS = json.loads(
    (Path(__file__).parents[1] / "pylib/gpulab/conformance/bad_graphs.json").read_text()
)


def test_table_is_large_and_varied() -> None:
    codes = {r["code"] for r in ROWS}
    assert {"VALIDATION", "LIMIT", "UNSUPPORTED_VERSION"} <= codes
    assert len(ROWS) >= 80


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_validator_refuses_bad_graph(row: dict) -> None:
    with pytest.raises(GpuLabError) as info:
        validate(row["graph"])
    err = info.value
    what = f"{row['name']}: got {err.code} node={err.node} {err.message!r}"
    assert err.code == row["code"], what
    assert err.node == row["node"], what
    if row["node"] is not None:
        assert f"node {row['node']} (" in err.message, what
    if row["says"]:
        assert row["says"] in err.message.lower(), what
