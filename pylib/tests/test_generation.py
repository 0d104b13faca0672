"""Generation changes nothing: every generated file is committed as `make gen` writes it.

gpulab.codegen (make.py) is the one source of the templated and register-blocked WGSL kernels,
the GLSL arms, maps.rs, the CPU map kernels, the conformance corpus (cases.json, bad_graphs.json)
and the docs tables (wgpu-py's codegen/tests/test_codegen_z.py is the model). The package's
ops.json, kernels/ops.json and kernels/wgsl are symbolic links to their one source (checked
here); the kernels.wasm rebuild is checked by backends-js/test/wasm-build.test.mjs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
from gpulab.codegen import make

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "pylib/gpulab/conformance/cases.json"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return make


@pytest.fixture(scope="module")
def files(gen: ModuleType) -> dict[Path, bytes]:
    return gen.outputs()


def test_the_package_links_to_each_source_once() -> None:
    """The package's tables and WGSL are links to the one source, not committed copies."""
    links = {
        "pylib/gpulab/ops.json": "backends-js/src/ops.json",
        "pylib/gpulab/kernels/ops.json": "kernels/ops.json",
        "pylib/gpulab/kernels/wgsl": "kernels/wgsl",
    }
    for link, source in links.items():
        path = ROOT / link
        assert path.is_symlink(), f"{link} must be a link to {source}, not a copy"
        assert path.resolve() == (ROOT / source).resolve()


def test_generation_changes_nothing(gen: ModuleType, files: dict[Path, bytes]) -> None:
    stale = [p.relative_to(ROOT).as_posix() for p in gen.stale(files)]
    assert not stale, f"stale generated files (run `make gen`): {stale}"


def test_every_kind_of_generated_file_is_covered(files: dict[Path, bytes]) -> None:
    names = {p.relative_to(ROOT).as_posix() for p in files}
    expected = {
        "kernels/wgsl/matmul_rb_v4.wgsl",
        "kernels/wgsl/matmul.wgsl",
        "pylib/gpulab/conformance/cases.json",
        "pylib/gpulab/conformance/bad_graphs.json",
    }
    assert expected <= names


# Every lane (the browser ones included) runs the whole corpus, so each op's share is bounded
# on its own: the next op adds its own cases within its own bound and never breaks another's.
# The largest today: matmul's 27 cases, 282 KB; the largest case 64 KB (a 130-wide matmul).
MAX_OP_BYTES = 320_000
MAX_CASE_BYTES = 72_000


def test_each_op_keeps_its_corpus_share_small(files: dict[Path, bytes]) -> None:
    cases = json.loads(files[CASES])
    per_op: Counter[str] = Counter()
    for case in cases:
        size = len(json.dumps(case))
        assert size <= MAX_CASE_BYTES, f"case {case['name']} is {size} bytes"
        per_op[case["op"]] += size
    over = {op: size for op, size in per_op.items() if size > MAX_OP_BYTES}
    assert not over, f"ops over {MAX_OP_BYTES} bytes of corpus: {over}"


def test_a_stale_or_leftover_file_is_reported(
    gen: ModuleType, files: dict[Path, bytes], tmp_path: Path, monkeypatch
) -> None:
    """The check can fail: an edited output and a generated kernel without a template are
    both found."""
    path = CASES
    edited = dict(files)
    edited[path] = files[path] + b" "
    assert gen.stale(edited) == [path]
    leftover = tmp_path / "old_kernel.wgsl"
    leftover.write_text(gen.GENERATED_MARK + " from a template that is gone\n")
    monkeypatch.setattr(gen, "WGSL", tmp_path)
    assert gen.stale(files) == [leftover]


def test_the_loaded_tables_are_the_shared_ones() -> None:
    from gpulab import optable

    assert optable.load() == json.loads((ROOT / "backends-js/src/ops.json").read_text())


def test_int32_rows_give_i32_kernels_that_compile(monkeypatch) -> None:
    """The templates take int32: rows allowing int32 give unary_i32/binary_i32/reduce_i32.wgsl
    (and i32 Rust, JS and numpy kernels), and the WGSL compiles (naga, through wgpu-py)."""
    import copy

    from gpulab.codegen import cpu, glsl, lanes, rust, tables, wgsl

    ops = copy.deepcopy(tables.op_table())
    kernels = copy.deepcopy(tables.kernel_table())
    for op in ("neg", "add", "sum"):
        ops["ops"][op]["types"]["T"] = ["float32", "int32"]
    neg = kernels["ops"]["neg"]
    neg["wgsl"] = {"float32": neg["wgsl"], "int32": "-x"}
    neg["rust"] = {"float32": neg["rust"], "int32": "simd(|x| i32x4_neg(x), |x| x.wrapping_neg())"}
    neg["js"] = {"float32": "-x", "int32": "-x | 0"}
    neg["glsl"] = {"float32": neg["glsl"], "int32": "-x"}
    add = kernels["ops"]["add"]
    add["rust"] = {"float32": add["rust"], "int32": None}  # no wasm kernel: UNSUPPORTED there
    monkeypatch.setattr(tables, "op_table", lambda: ops)
    monkeypatch.setattr(tables, "kernel_table", lambda: kernels)

    out = {p.name: data.decode() for p, data in wgsl.outputs().items()}
    assert {"unary_i32.wgsl", "binary_i32.wgsl", "reduce_i32.wgsl"} <= set(out)
    assert "array<i32>" in out["unary_i32.wgsl"]
    assert re.search(r"case 0u(, default)?: \{ return -x; \}", out["unary_i32.wgsl"])
    assert "case 0u, default: { return i32(0); }" in out["reduce_i32.wgsl"]
    maps_rs = rust.outputs()[rust.OUT].decode()
    assert "map1!(neg_i32, i32, simd(" in maps_rs and "add_i32" not in maps_rs
    assert "byDtype({ float32: unary((x) => -x), int32: unary((x) => -x | 0) })" in cpu.js()
    # GLSL: an int op() over R32I textures (A_INT) beside the float one; no lanes.json entry
    unary_glsl = glsl.outputs()[glsl.GLSL / "unary.glsl"].decode()
    assert "#if defined(A_INT)\nint op(int x) {\n#if defined(OP_neg)\n  return -x;\n" in unary_glsl
    binary_glsl = glsl.outputs()[glsl.GLSL / "binary.glsl"].decode()
    assert "int op(int x, int y) {\n#if defined(OP_add)\n  return x + y;\n" in binary_glsl
    listed = lanes.missing()
    assert "neg:int32" not in listed.get("webgl2", {}) and "add:int32" in listed["wasm"]
    assert "mean" not in out["reduce_i32.wgsl"].split("selected by OP:")[1].split("\n")[1]

    wgpu = pytest.importorskip("wgpu", reason="wgpu-py compiles the WGSL")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="low-power")
    if adapter is None:
        pytest.skip("no wgpu adapter")
    device = adapter.request_device_sync()
    for name in ("unary_i32.wgsl", "binary_i32.wgsl", "reduce_i32.wgsl"):
        module = device.create_shader_module(code=out[name])
        device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main", "constants": {"OP": 0}}
        )


def test_generated_cpu_reductions_keep_the_order_and_the_dtype() -> None:
    """The reduce kernels made from the table (cpu/maps.py): sum gives fixed_sum's bits at
    float32, and an int32 row would wrap in int32 (lanes of the operand's dtype)."""
    from types import SimpleNamespace

    import numpy as np
    from gpulab.cpu.fixed_reduce import fixed_sum
    from gpulab.cpu.kernels import KERNELS, reduce_kernel

    node = SimpleNamespace(attrs={"axis": None, "keepdim": False})
    x = np.random.default_rng(7).standard_normal(4097).astype(np.float32) * 1e3
    assert KERNELS["sum"](node, [x]).tobytes() == np.float32(fixed_sum(x)).tobytes()
    int_sum = reduce_kernel(np.add, {"int32": 0}, lambda t, n: t)
    out = int_sum(node, [np.array([2**31 - 1, 1, 5], np.int32)])
    assert out.dtype == np.int32 and int(out) == -(2**31) + 5
