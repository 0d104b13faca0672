"""The WGSL fuzz lane: random, hostile and mutated WGSL sources (hypothesis) against both
scanners (wgsl_scan / wgsl-scan.mjs), both loop-budget rewriters and the pre-compile bounds
(wgsl_bounds / wgsl-bounds.mjs), and through the validator of a graph around them. Each source
must get a protocol answer only (a GpuLabError of VALIDATION or LIMIT, or none: never a
RecursionError or a crash of the JS twin), both twins must give the same scan, rewrite and
refusal word for word, and each example must finish within hypothesis' deadline (30 s, for a
loaded two-core machine: the checks are linear and take milliseconds; a quadratic scan of these
sizes took minutes).

GPULAB_WGSL_FUZZ=<examples per strategy> runs longer (default 100), e.g.
`GPULAB_WGSL_FUZZ=5000 .venv/bin/python -m pytest -q pylib/tests/test_wgsl_fuzz.py`."""

from __future__ import annotations

import os
from datetime import timedelta

from conftest import wgsl_python
from gpulab.errors import GpuLabError
from gpulab.protocol import validate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2e import student_kernels as sk

EXAMPLES = int(os.environ.get("GPULAB_WGSL_FUZZ", "100"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=30),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# pieces WGSL is made of, and the ones that broke something before
FRAGMENTS = [
    *"()[]{}<>,;:=+-*/%&|^!~.@ \n\t",
    "//",
    "/*",
    "*/",
    "\v",
    "\f",
    "\r",
    "\u0085",
    "\u2028",
    "\u2029",
    "\u200e",
    "é",
    "\U0001f600",
    "\ud800",
    "array",
    "array<",
    "vec4",
    "vec3<f16>",
    "mat4x3f",
    "atomic<u32>",
    "f32",
    "u32",
    "i32",
    "var",
    "var<private>",
    "var<workgroup>",
    "var<storage, read_write>",
    "var<uniform>",
    "const",
    "override",
    "alias",
    "struct",
    "fn",
    "main",
    "loop",
    "for",
    "while",
    "if",
    "else",
    "else if",
    "return",
    "_gpulab_iters",
    "N",
    "S",
    "0",
    "1",
    "4u",
    "65535",
    "65536",
    "0x10000",
    "1e5",
    "2.5",
    "-",
    "@workgroup_size(",
    "@compute",
    "@group(0)",
    "@binding(1)",
    "@size(",
    "@align(",
    "workgroupBarrier()",
]
REPEATED = [
    "(",
    "abs(",
    "[",
    "{",
    "array<",
    "o[1]+",
    ".xyzw",
    " else if true {}",
    "-",
    "@a ",
    "@group(0) var a:",
    "struct a{",
    "// x\v",
    "/*",
    "loop {",
    "const N = N * 2;",
]


@st.composite
def random_sources(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=300))
    return "".join(parts)


@st.composite
def hostile_sources(draw: st.DrawFn) -> str:
    """A kernel with one fragment repeated up to 3000 times inside main, or at module scope."""
    piece = draw(st.sampled_from(REPEATED))
    count = draw(st.integers(1, 3000))
    inside = draw(st.booleans())
    filler = piece * count
    body = f"o[0] = {filler}1.0;" if inside else ""
    module = "" if inside else filler
    return (
        "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n"
        f"{module}\n@compute @workgroup_size(64) fn main() {{ {body} }}"
    )


BASES = [node["source"] for make in sk.CASES for node in make().graph["nodes"] if "source" in node]


@st.composite
def mutated_sources(draw: st.DrawFn) -> str:
    """A working kernel with slices replaced by fragments or repeated."""
    source = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(1, 8))):
        a = draw(st.integers(0, len(source)))
        b = draw(st.integers(a, min(len(source), a + 40)))
        if draw(st.booleans()):
            insert = draw(st.sampled_from(FRAGMENTS)) * draw(st.integers(1, 200))
        else:
            insert = source[a:b] * draw(st.integers(0, 50))
        source = source[:a] + insert + source[b:]
    return source


def _graph(source: str, workgroups: list[int]) -> dict:
    return {
        "version": 5,
        "nodes": [
            {
                "id": 0,
                "op": "wgsl",
                "inputs": [],
                "source": source,
                "results": [{"name": "o", "shape": [4], "dtype": "float32"}],
                "workgroups": workgroups,
                "params": {},
            }
        ],
        "outputs": [{"name": "o", "id": 0}],
    }


def _judge(wgsl_js, source: str, workgroups: list[int]) -> None:
    py = wgsl_python(source, workgroups)
    js = wgsl_js.ask(source, workgroups)
    assert "crash" not in js, js
    assert js == py, (source[:300], py["bounds"], js.get("bounds"))
    try:
        validate(_graph(source, workgroups))
    except GpuLabError as err:
        assert err.code in ("VALIDATION", "LIMIT"), err
        if ": WGSL limit at" in err.message or ": WGSL error at" in err.message:
            assert py["bounds"] is not None and py["bounds"]["message"] in err.message
    else:  # a source the validator takes passed the bounds
        assert py["bounds"] is None


WORKGROUPS = st.lists(st.integers(1, 65535), min_size=3, max_size=3)


@SETTINGS
@given(source=random_sources(), workgroups=WORKGROUPS)
def test_random_sources_get_the_same_protocol_answer_from_both_twins(wgsl_js, source, workgroups):
    _judge(wgsl_js, source, workgroups)


@SETTINGS
@given(source=hostile_sources(), workgroups=WORKGROUPS)
def test_hostile_sources_get_the_same_protocol_answer_from_both_twins(wgsl_js, source, workgroups):
    _judge(wgsl_js, source, workgroups)


@SETTINGS
@given(source=mutated_sources(), workgroups=WORKGROUPS)
def test_mutated_kernels_get_the_same_protocol_answer_from_both_twins(wgsl_js, source, workgroups):
    _judge(wgsl_js, source, workgroups)


def test_the_judge_catches_a_disagreement_and_a_crash(wgsl_js):
    """The lane can fail: a JS answer that differs, or a crash, is reported."""
    import pytest

    class Liar:
        def __init__(self, answer: dict) -> None:
            self.answer = answer

        def ask(self, source: str, workgroups: list[int]) -> dict:
            return self.answer

    source = BASES[0]
    honest = wgsl_js.ask(source, [1, 1, 1])
    _judge(wgsl_js, source, [1, 1, 1])
    with pytest.raises(AssertionError):
        _judge(Liar({**honest, "bounds": {"code": "LIMIT", "message": "x"}}), source, [1, 1, 1])
    with pytest.raises(AssertionError):
        _judge(Liar({"crash": "TypeError"}), source, [1, 1, 1])
