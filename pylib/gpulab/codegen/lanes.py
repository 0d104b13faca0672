"""The kernel table's share of pylib/gpulab/conformance/lanes.json: where a language's text is null at a
dtype (`"glsl": {"float32": "...", "int32": null}`), that backend lane refuses the op at that
dtype with UNSUPPORTED, and lanes.json says so. Entries whose reason starts with REASON are
written here; every other entry is hand data and kept as it is (so is the file's layout when
nothing generated changes).
"""

from __future__ import annotations

import json
from pathlib import Path

from gpulab.codegen import tables

PATH = tables.ROOT / "pylib/gpulab/conformance/lanes.json"
REASON = "kernels/ops.json: "
# kernel language -> the conformance lanes that run it
LANES = {
    "wgsl": ["webgpu", "wgpu"],
    "glsl": ["webgl2"],
    "rust": ["wasm"],
    "js": ["cpu"],
    "np": ["cpu-python"],
}
# the dtypes a language's generated kernels handle at all, where that is not every dtype of the
# kernel table (none today: the GLSL arms take R32F and R32I textures, gen/glsl.py)
LANG_DTYPES: dict[str, set[str]] = {}


def missing() -> dict[str, dict[str, str]]:
    """lane -> {op:dtype: reason} for every null text of a map/reduce op."""
    out: dict[str, dict[str, str]] = {}
    for op, row in tables.kernel_table()["ops"].items():
        field = "combine" if row["family"] == "reduce" else None
        for dtype in tables.dtypes_of(op):
            for lang, lanes in LANES.items():
                if dtype not in LANG_DTYPES.get(lang, {dtype}):
                    why = f"{REASON}the generated {lang} kernels take no {dtype}"
                elif tables.expr(row, lang, dtype, field, optional=True) is None:
                    why = f"{REASON}no {lang} text for {op} at {dtype}"
                else:
                    continue
                for lane in lanes:
                    out.setdefault(lane, {})[f"{op}:{dtype}"] = why
    return out


def outputs() -> dict[Path, bytes]:
    text = PATH.read_text(encoding="utf-8")
    data = json.loads(text)
    new = {
        lane: {k: v for k, v in entries.items() if not str(v).startswith(REASON)}
        for lane, entries in data.items()
    }
    for lane, entries in missing().items():
        new.setdefault(lane, {}).update(dict(sorted(entries.items())))
    if new == data:
        return {PATH: text.encode()}
    return {PATH: (json.dumps(new, indent=2) + "\n").encode()}
