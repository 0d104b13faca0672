"""The pre-compile bounds of students' WGSL (wgsl_bounds.py and its twin wgsl-bounds.mjs): the
sources that crashed naga or lavapipe in `gpulab serve` are refused before any compiler sees
them, with LIMIT naming the line, column and limit, the same words in both validators; the
kernels the examples use pass; a kernel's work is bounded; `_gpulab_` names are refused."""

from __future__ import annotations

import pytest
from conftest import wgsl_python
from gpulab.errors import GpuLabError
from gpulab.graph import Graph
from gpulab.protocol import validate

from e2e import student_kernels as sk

HEAD = "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n"


def kernel(body: str, extra: str = "", size: str = "1") -> str:
    return HEAD + extra + f"@compute @workgroup_size({size}) fn main() {{ {body} }}"


# the crash reproductions (each took `gpulab serve` down in create_shader_module or in
# lavapipe), with the limit each passes
CRASHES = {
    "5000 nested parentheses": (
        kernel("o[0] = " + "(" * 5000 + "1.0" + ")" * 5000 + ";"),
        "max_wgsl_expression_depth",
    ),
    "5000 nested calls": (
        kernel("o[0] = " + "abs(" * 5000 + "1.0" + ")" * 5000 + ";"),
        "max_wgsl_expression_depth",
    ),
    "20000-term sum": (
        kernel("o[0] = " + "+".join(["o[1]"] * 20000) + ";"),
        "max_wgsl_expression_operators",
    ),
    "5000 nested array types": (
        HEAD + "var<private> p: " + "array<" * 5000 + "f32" + ", 1>" * 5000 + ";\n"
        "@compute @workgroup_size(1) fn main() {}",
        "max_wgsl_type_depth",
    ),
    "function array<f32, 4000000>": (
        kernel("var a: array<f32, 4000000>; a[1] = 2.0; o[0] = a[u32(o[1])];"),
        "max_wgsl_array_elements",
    ),
    "1 GB var<private>": (
        HEAD + "var<private> a: array<array<f32, 65535>, 4000>;\n"
        "@compute @workgroup_size(1) fn main() { a[1][1] = 2.0; o[0] = a[1][u32(o[1])]; }",
        "max_wgsl_private_bytes",
    ),
    "64 MB var<workgroup>": (
        HEAD + "var<workgroup> a: array<array<f32, 4096>, 4096>;\n"
        "@compute @workgroup_size(1) fn main() { a[1][1] = 2.0; o[0] = a[1][u32(o[1])]; }",
        "max_wgsl_workgroup_bytes",
    ),
    "20000 else-if arms": (
        kernel("if o[0] > 1.0 {}" + " else if o[0] > 1.0 {}" * 20000),
        "max_wgsl_block_depth",
    ),
    "20000-long swizzle chain": (
        kernel("var v = vec4f(1.0); o[0] = v" + ".xyzw" * 20000 + ".x;"),
        "max_wgsl_expression_operators",
    ),
    "an array sized by a const expression": (
        kernel("var a: array<f32, N * 64>;", extra="const N = 1000u;\n"),
        "max_wgsl_function_bytes",
    ),
    "an alias of a big array": (
        kernel("var b: Big;", extra="alias Big = array<vec4f, 10000>;\n"),
        "max_wgsl_function_bytes",
    ),
    "a struct member @size": (
        HEAD + "struct S { @size(100000000) a: f32 }\nvar<private> s: S;\n"
        "@compute @workgroup_size(1) fn main() {}",
        "max_wgsl_private_bytes",
    ),
}


def _graph(source: str, workgroups: list[int] | None = None) -> dict:
    g = Graph()
    o = g.wgsl(source, outputs={"o": ((4,), "float32")}, workgroups=workgroups or [1])
    return g.to_dict(o=o)


@pytest.mark.parametrize("name", list(CRASHES))
def test_sources_that_crashed_the_server_are_refused_before_compiling(wgsl_js, name):
    source, limit = CRASHES[name]
    with pytest.raises(GpuLabError) as err:
        validate(_graph(source))
    assert err.value.code == "LIMIT" and err.value.node is not None
    assert limit in err.value.message and "WGSL limit at line" in err.value.message
    js = wgsl_js.ask(source)
    assert js["bounds"] == wgsl_python(source)["bounds"]
    assert limit in js["bounds"]["message"]


LEGIT = [
    *(
        node["source"]
        for case in (make() for make in sk.CASES)
        for node in case.graph["nodes"]
        if node["op"] == "wgsl"
    ),
    sk.SAXPY,
    kernel(
        "for (var i = 0u; i < 8u; i++) { acc[i] = 1.0; } o[0] = acc[3];",
        extra="var<private> acc: array<f32, 2048>;\n",
        size="8, 8",
    ),
    HEAD + "const T = 16u;\nvar<workgroup> ta: array<f32, T * T>;\n"
    "var<workgroup> tb: array<vec4<f32>, (T * T) / 4>;\n"
    "@compute @workgroup_size(T, T) fn main() { workgroupBarrier(); }",
    kernel("let s = " + " + ".join(["o[1]"] * 200) + "; o[0] = s;"),
    kernel("var t = array<f32, 1000>(" + ", ".join(["-1.5"] * 1000) + "); o[0] = t[3];"),
    kernel("var m: mat4x4f; var a: array<mat4x4<f32>, 31>; o[0] = m[0][0] + a[1][2][3];"),
]


def test_the_examples_kernels_pass_the_bounds_in_both_twins(wgsl_js):
    for source in LEGIT:
        assert wgsl_python(source, [64, 4, 1])["bounds"] is None, source[:200]
        assert wgsl_js.ask(source, [64, 4, 1])["bounds"] is None, source[:200]


def test_the_limits_sit_at_their_edges():
    """One more than each limit is refused, the limit itself is not."""
    at = {
        "max_wgsl_expression_depth": lambda n: kernel("o[0] = " + "(" * n + "1.0" + ")" * n + ";"),
        "max_wgsl_block_depth": lambda n: kernel("{" * (n - 1) + "}" * (n - 1)),
        "max_wgsl_type_depth": lambda n: kernel(
            "var p: " + "array<" * (n - 1) + "vec2<f32>" + ", 1>" * (n - 1) + ";"
        ),
        "max_wgsl_expression_operators": lambda n: kernel(
            "o[0] = " + "+".join(["1.0"] * (n - 1)) + ";"  # [ and = count too
        ),
        "max_wgsl_array_elements": lambda n: (
            HEAD
            + f"var<storage> big: array<f32, {n}>;\n"
            + f"@compute @workgroup_size(1) fn main() {{ var a: array<array<u32, {n}>, 0>; }}"
        ),
    }
    from gpulab import optable

    for name, make in at.items():
        most = int(optable.limits()[name])
        assert wgsl_python(make(most))["bounds"] is None, name
        refused = wgsl_python(make(most + 1))["bounds"]
        assert refused is not None and name in refused["message"], (name, refused)


def test_a_kernels_work_is_bounded_at_validation(wgsl_js):
    """workgroups x workgroup size x the loop budget (when it loops) <= max_kernel_work: 65535^3
    workgroups (years of lavapipe) is refused; the issue's 483-byte request (1000 x 64
    invocations of a loop) and the deadline tests' slow kernel stay within it."""
    looping = kernel("for (var i = 0u; i < 10u; i++) { o[0] += 1.0; }", size="64")
    straight = kernel("o[0] = 1.0;", size="64")
    for source, groups, refused in (
        (straight, [65535, 65535, 65535], True),
        (looping, [65535, 65535, 1], True),
        (looping, [1000, 1, 1], False),
        (looping, [2048, 1, 1], False),
        (straight, [65535, 1000, 1], False),
    ):
        py = wgsl_python(source, groups)["bounds"]
        assert (py is not None) == refused, (groups, py)
        assert wgsl_js.ask(source, groups)["bounds"] == py
        if refused:
            assert "max_kernel_work 68719476736" in py["message"]
    with pytest.raises(GpuLabError) as err:
        validate(_graph(straight, [65535, 65535, 65535]))
    assert err.value.code == "LIMIT" and "the kernel's work is 65535 x 65535 x 65535" in (
        err.value.message
    )


def test_identifiers_starting_gpulab_are_refused(wgsl_js):
    """A kernel may not touch the loop budget's counters (it could reset `_gpulab_iters`)."""
    source = kernel("for (var i = 0u; i < 4u; i++) { _gpulab_iters = 0u; }")
    with pytest.raises(GpuLabError) as err:
        validate(_graph(source))
    assert err.value.code == "VALIDATION"
    assert "reserved for the loop budget: _gpulab_iters" in err.value.message
    assert wgsl_js.ask(source)["bounds"] == wgsl_python(source)["bounds"]


def test_an_array_count_the_checker_cannot_evaluate_is_refused_by_name(wgsl_js):
    for count in ("n", "2.5", "f(3)", "N", "1 / 0"):
        source = kernel(
            f"var a: array<f32, {count}>;", extra="override N: u32;\nfn f(x: u32) -> u32 {}\n"
        )
        py = wgsl_python(source)["bounds"]
        assert py is not None and py["code"] == "VALIDATION", (count, py)
        assert f"the array count `{count}` is not an integer constant" in py["message"]
        assert wgsl_js.ask(source)["bounds"] == py
