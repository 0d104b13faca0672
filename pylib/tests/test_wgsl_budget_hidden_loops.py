"""A loop on the line after a `//` comment ended by any WGSL line break is budgeted: natively
lavapipe silently cut a 100,000-iteration loop hidden after a vertical tab at 65,535 (a wrong
count without an error); now the run fails with the loop budget's BACKEND error, and the same
loop on its own line too (the scanners' half: test_wgsl_hostile_sources.py)."""

from __future__ import annotations

import pytest
from gpulab import Graph, host
from gpulab.errors import GpuLabError

BREAKS = ["\n", "\v", "\f", "\r", "\u0085", "\u2028", "\u2029"]


def _graph(brk: str) -> dict:
    source = (
        "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
        "@compute @workgroup_size(1)\n"
        f"fn main() {{ var n = 0u; // count{brk}for (var i = 0u; i < 100000u; i++) {{ n += 1u; }}\n"
        "  o[0] = n;\n}\n"
    )
    g = Graph()
    return g.to_dict(o=g.wgsl(source, outputs={"o": ((1,), "uint32")}, workgroups=1))


@pytest.mark.parametrize("brk", BREAKS, ids=[f"U+{ord(b):04X}" for b in BREAKS])
def test_a_loop_after_any_line_break_passes_the_budget_instead_of_a_wrong_count(brk):
    with pytest.raises(GpuLabError) as err:
        host.execute(_graph(brk), backend="wgpu", allow_software=True)
    assert err.value.code == "BACKEND"
    assert "loop budget of 65534" in err.value.message
