"""The WGSL files themselves: the rules of docs/plan.md that text can show (shared math block
identical everywhere, no NaN/inf literals, params structs and bindings matching what the
planner emits), and the accuracy of the portable math (exp, log, tanh, gelu) on wgpu against
float64 over dense sweeps."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from gpulab.lowering import lowered_checked
from gpulab.native.planner import plan_graph
from gpulab.protocol import validate

ROOT = Path(__file__).resolve().parents[2]
WGSL = {
    p.stem: p.read_text(encoding="utf-8")
    for p in sorted((ROOT / "kernels" / "wgsl").glob("*.wgsl"))
}
MATH = re.compile(r"// ---- shared math:.*?// ---- end shared math ----\n", re.DOTALL)


def test_the_package_ships_byte_copies_of_the_kernels() -> None:
    """wgpu-py reads pylib/gpulab/kernels/wgsl; the browser fetches kernels/wgsl: same bytes."""
    copies = {p.stem: p.read_bytes() for p in (ROOT / "pylib/gpulab/kernels/wgsl").glob("*.wgsl")}
    assert copies == {k: v.encode() for k, v in WGSL.items()}, "run `make gen`"
    from gpulab.native.wgpu_executor import kernel_source

    assert all(kernel_source(k) == v for k, v in WGSL.items())


def test_the_shared_math_block_is_identical_in_every_kernel_that_has_it() -> None:
    blocks = {name: MATH.findall(text) for name, text in WGSL.items()}
    having = {name: b[0] for name, b in blocks.items() if b}
    assert {"unary", "binary", "reduce", "rows"} <= set(having)
    first = next(iter(having.values()))
    assert all(block == first for block in having.values()), "edit the block in every kernel"


def test_no_nan_or_inf_literals_and_no_self_compare() -> None:
    for name, text in WGSL.items():
        code = "\n".join(line.split("//")[0] for line in text.splitlines())
        assert not re.search(
            r"bitcast<f32>\(\s*(0x7f[89a-f]|0xff[89a-f]|NAN_BITS|INF_BITS)", code, re.IGNORECASE
        ), f"{name}: a const bitcast to NaN/inf"
        assert not re.search(r"\b(\w+)\s*!=\s*\1\b", code), f"{name}: x != x is folded away"
        assert not re.search(r"\b1e\d{2,}|\binf\b|\bnan\b", code), f"{name}: a non-finite literal"


def _struct_words(text: str) -> int:
    code = "\n".join(line.split("//")[0] for line in text.splitlines())  # comments hold commas
    body = re.search(r"struct Params\s*\{(.*?)\}", code, re.DOTALL)
    assert body, "every kernel has a Params uniform"
    fields = [f for f in body.group(1).replace("\n", " ").split(",") if f.strip()]
    assert all(re.search(r":\s*(u32|f32)\s*$", f) for f in fields), "scalar fields only"
    return len(fields)


def _bindings(text: str, entry: str) -> int:
    """The binding numbers the entry point uses (a module with several entry points may
    declare two variables at one binding, one per entry point: rows.wgsl, adam.wgsl)."""
    code = "\n".join(line.split("//")[0] for line in text.splitlines())
    decls = re.findall(r"@group\(0\) @binding\((\d+)\) var<[^>]*>\s*(\w+)", code)
    used = _used_names(code, entry)
    return len({b for b, name in decls if name in used or name == "p"})


def _used_names(code: str, entry: str) -> set[str]:
    """Every identifier the entry point's function reads, with those of the functions it
    calls (what a WGSL compiler counts as statically used)."""
    bodies = {}
    for m in re.finditer(r"\bfn\s+(\w+)\s*\(", code):
        start = code.index("{", m.start())
        depth, end = 0, start
        for end in range(start, len(code)):
            depth += {"{": 1, "}": -1}.get(code[end], 0)
            if depth == 0:
                break
        bodies[m.group(1)] = code[start : end + 1]
    used: set[str] = set()
    seen: set[str] = set()
    todo = [entry]
    while todo:
        fn = todo.pop()
        if fn in seen or fn not in bodies:
            continue
        seen.add(fn)
        names = set(re.findall(r"\b[A-Za-z_]\w*\b", bodies[fn]))
        used |= names
        todo += [n for n in names if n in bodies]
    return used


def _overrides(text: str) -> tuple[set[str], set[str]]:
    found = re.findall(r"override (\w+)\s*:\s*u32\s*(=)?", text)
    return {n for n, _ in found}, {n for n, eq in found if not eq}


@pytest.mark.slow  # every corpus plan against its kernels' WGSL
def test_plans_match_each_kernels_params_bindings_and_overrides() -> None:
    from gpulab.conformance.runner import load_cases

    from e2e.multi_graphs import params_graph
    from e2e.test_plans_equal import MATMUL_KERNEL_SHAPES, matmul_kernel_graph

    seen = set()
    graphs = [c["graph"] for c in load_cases()]
    graphs += [matmul_kernel_graph(k) for k in MATMUL_KERNEL_SHAPES]
    graphs += [params_graph(k) for k in range(2, 9)]  # each adam_multiK (planner_multi.py)
    for graph in graphs:
        for storage in (16384, 32768):
            limits = {"maxComputeWorkgroupStorageSize": storage}
            if storage == 32768:
                limits["maxStorageBuffersPerShaderStage"] = 64  # up to 8 Adam parameters
            plan = plan_graph(lowered_checked(validate(graph)), limits)  # as executors do
            for step in plan["steps"]:
                text = WGSL[step["kernel"]]
                seen.add(step["kernel"])
                words = _struct_words(text)
                assert len(step["params"]) == words, step["kernel"]
                assert len(step["bindings"]) + 1 == _bindings(text, step["entry"]), step["kernel"]
                declared, required = _overrides(text)
                required &= _used_names(text, step["entry"]) | {"WG"}  # the entry's own
                assert required <= set(step["overrides"]) <= declared, step["kernel"]
    assert seen == set(WGSL)


# ---- accuracy of the portable math on the wgpu executor ---------------------------------


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


@pytest.fixture(scope="module")
def run_unary():
    pytest.importorskip("wgpu", reason="wgpu-py is not installed")
    from gpulab.native.wgpu_executor import open_executor

    ex = open_executor(True)

    def run(op: str, x: np.ndarray) -> np.ndarray:
        graph = {
            "version": 2,
            "nodes": [
                {"id": 0, "op": "input", "shape": [x.size], "data": x.tolist()},
                {"id": 1, "op": op, "a": 0},
            ],
            "outputs": [{"name": "y", "id": 1}],
        }
        program = ex.prepare(validate(graph))
        try:
            return program.run([{}], [1])[1]
        finally:
            program.dispose()

    yield run
    ex.dispose()


def test_exp_and_log_are_within_two_ulps(run_unary) -> None:
    x = np.linspace(-87.0, 88.5, 40001).astype(np.float32)
    assert _ulps(run_unary("exp", x), np.exp(x.astype(np.float64))).max() <= 2
    y = np.exp(np.linspace(-80.0, 80.0, 40001)).astype(np.float32)
    y = np.concatenate([y, np.linspace(0.5, 2.0, 20001, dtype=np.float32)])
    assert _ulps(run_unary("log", y), np.log(y.astype(np.float64))).max() <= 2


def test_tanh_and_gelu_meet_the_transcendental_class(run_unary) -> None:
    x = np.concatenate([np.linspace(-12.0, 12.0, 40001), np.linspace(-0.3, 0.3, 20001)])
    x = x.astype(np.float32)
    xd = x.astype(np.float64)
    want_tanh = np.tanh(xd)
    want_gelu = np.array([0.5 * v * math.erfc(-v / math.sqrt(2.0)) for v in xd])
    for op, want in (("tanh", want_tanh), ("gelu", want_gelu)):
        got = run_unary(op, x).astype(np.float64)
        spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        allowed = 16 * spacing + 5e-7
        assert np.all(np.abs(got - want) <= allowed), op
        relative = _ulps(got, want)[np.abs(want) > 1e-3]
        assert relative.max() <= 10, f"{op}: {relative.max()} ulps"  # well inside the class


def test_special_values_by_bit_pattern(run_unary) -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0], np.float32)
    assert np.isnan(run_unary("exp", x)[0]) and run_unary("exp", x)[1:3].tolist() == [np.inf, 0]
    log = run_unary("log", x)
    assert np.isnan(log[0]) and log[1] == np.inf and np.isnan(log[2]) and np.isnan(log[5])
    assert log[3] == -np.inf and log[4] == -np.inf
    neg = run_unary("neg", x)
    assert np.array_equal(
        neg[3:5].view(np.uint32), np.array([-0.0, 0.0], np.float32).view(np.uint32)
    )
    assert run_unary("relu", x).view(np.uint32).tolist()[0] == 0  # relu(NaN) = +0
    assert np.isnan(run_unary("sqrt", x)[5])
