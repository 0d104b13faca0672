"""The op table: gpulab/ops.json, a link to backends-js/src/ops.json (the single source).

Loaded with importlib.resources so it works from a wheel, an editable install and in Pyodide.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The parsed op table (cached; treat it as read-only)."""
    text = resources.files("gpulab").joinpath("ops.json").read_text(encoding="utf-8")
    return json.loads(text)


def ops() -> dict[str, dict[str, Any]]:
    """Op name -> its row (version, operands, attrs, shape_rule, tolerance, ...)."""
    return load()["ops"]


def limits() -> dict[str, int]:
    """max_rank, max_elements, max_total_elements, max_nodes, max_outputs."""
    return load()["limits"]


def tensor_features() -> dict[str, dict[str, Any]]:
    """Features of any node's tensors that need a later version (high_rank, zero_size,
    scalar_axis)."""
    return dict(load()["tensor_features"])


def protocol_versions() -> list[int]:
    """The graph versions this host knows."""
    return list(load()["protocol_versions"])


def reduce_lanes() -> int:
    """The lane count of the fixed reduction order (64)."""
    return int(load()["reduce_lanes"])


def operand_names(row: dict[str, Any], count: int) -> list[str]:
    """The operand names of a checked node, one per operand: a variadic row's list field first
    (`variadic`: the field's name, e.g. concat's `tensors`: `tensors[0]`, `tensors[1]`, ...),
    then the row's `operands` (twin of optable.mjs `operandNames`)."""
    if "variadic" not in row:
        return list(row["operands"])
    listed = count - len(row["operands"])
    return [f"{row['variadic']}[{i}]" for i in range(listed)] + list(row["operands"])


def operand_field(name: str) -> str:
    """The op-table name of an operand name (`tensors[2]` -> `tensors`)."""
    return name.split("[", 1)[0]
