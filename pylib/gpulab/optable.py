"""The op table: gpulab/ops.json, a byte copy of backends-js/src/ops.json (the single source).

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


def protocol_versions() -> list[int]:
    """The graph versions this host knows."""
    return list(load()["protocol_versions"])


def reduce_lanes() -> int:
    """The lane count of the fixed reduction order (64)."""
    return int(load()["reduce_lanes"])
