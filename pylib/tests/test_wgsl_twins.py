"""The WGSL binding scanners and the wgsl op's checks are twins: on a corpus of
sources (the examples' kernels, comments, nesting, odd spacing, hostile text) both scanners give
the same declarations, and on graphs built around those sources both validators give the same
first error (code, node and message word for word) or the same checked shapes and dtypes."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from gpulab.errors import GpuLabError
from gpulab.protocol import validate
from gpulab.wgsl_scan import scan_wgsl

# messages of the wgsl op's own checks, worded the same by both validators
OWN_WORDS = re.compile(r"WGSL|params|workgroups|results|source|index")
ROOT = Path(__file__).resolve().parents[2]
SAXPY = """@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
struct Params { a: f32, n: u32 }
@group(0) @binding(3) var<uniform> p: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let i = id.x;
  if (i < p.n) { out[i] = p.a * x[i] + y[i]; }
}
"""
SOURCES = [
    SAXPY,
    SAXPY.replace("read> y", "read_write> y"),
    SAXPY.replace("a: f32, n: u32", "a: f32, n: u32, extra: i32"),
    SAXPY.replace("a: f32", "a: vec2f"),
    SAXPY.replace("@group(0) @binding(3)", "@group(1) @binding(3)"),
    SAXPY.replace("@binding(1)", "@binding(0)"),
    SAXPY.replace("fn main", "fn mian"),
    SAXPY.replace("array<f32>;\n@group(0) @binding(2)", "array<i32>;\n@group(0) @binding(2)"),
    "/* @group(0) @binding(7) var<storage> z: array<f32>; /* nested */ still */\n" + SAXPY,
    "// @group(0) @binding(9) var<uniform> q: Q;\n" + SAXPY.replace("\n", "\r\n"),
    SAXPY.replace(" ", "\u2028", 3).replace("@group(0) @binding(0)", "@ group ( 0 )@binding(0u)"),
    SAXPY.replace("out: array<f32>", "out: array<atomic<u32>>"),
    SAXPY.replace("array<f32>;", "array<f32, 16>;"),
    SAXPY.replace(
        "struct Params { a: f32, n: u32 }", "struct Params {\n  @align(4) a: f32,\n  n: u32,\n}"
    ),
    "@compute @workgroup_size(1) fn main() {}",
    "@workgroup_size(1) @compute fn main() {}",
    (
        "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\nvar<private> t: u32;\n"
        "var<workgroup> w: array<u32, 64>;\n@compute @workgroup_size(1) fn main() { o[0] = 1u; }"
    ),
    "@a " * 2000,
    "var x: " + " " * 5000,
    "struct a{" * 500,
    "@group(0) @binding(0) var<storage, read> x: array<f32>",
    "",
    "\u00e9\U0001f600 @compute fn main(){}",
]
JS = """
import { scanWgsl } from './backends-js/src/wgsl-scan.mjs';
import { validateGraph } from './backends-js/src/validate.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const { sources, graphs } = JSON.parse(text);
const check = (g) => {
  try {
    const c = validateGraph(g);
    return { ok: true, shapes: c.nodes.map((n) => [n.id, n.shape, n.dtype]), version: c.requiredVersion };
  } catch (e) {
    if (!e || typeof e.code !== 'string') return { crash: String(e && e.stack || e) };
    return { code: e.code, node: e.node ?? null, message: e.message };
  }
};
process.stdout.write(JSON.stringify({ scans: sources.map(scanWgsl), checks: graphs.map(check) }));
"""


def _py_check(graph: dict) -> dict:
    try:
        c = validate(graph)
        return {
            "ok": True,
            "shapes": [[n.id, list(n.shape), n.dtype] for n in c.nodes],
            "version": c.required_version,
        }
    except GpuLabError as e:
        return {"code": e.code, "node": e.node, "message": e.message}


def _graph(text: str, **node: object) -> dict:
    wgsl = {
        "id": 5,
        "op": "wgsl",
        "inputs": [0, 1],
        "source": text,
        "results": [{"name": "out", "shape": [4], "dtype": "float32"}],
        "workgroups": [1],
        "params": {"a": 2.0, "n": 4},
    }
    wgsl.update(node)
    return {
        "version": 5,
        "nodes": [
            {"id": 0, "op": "input", "shape": [4], "data": [1, 2, 3, 4]},
            {"id": 1, "op": "input", "shape": [4], "data": [0.5, 0.5, 0.5, 0.5]},
            wgsl,
            {"id": 6, "op": "wgsl_output", "a": 5, "index": 0},
        ],
        "outputs": [{"name": "o", "id": 6}],
    }


def _graphs() -> list[dict]:
    out = [_graph(s) for s in SOURCES]
    variants: list[dict] = [
        {"params": {}},
        {"params": {"a": 2.0}},
        {"params": {"a": 2.0, "n": 2.5}},
        {"params": {"a": 2.0, "n": -1}},
        {"params": {"a": 1e39, "n": 4}},
        {"params": {"a": True, "n": 4}},
        {"params": {"a": 1.0, "n": 4, "z": 1}},
        {"params": [1]},
        {"workgroups": [65536]},
        {"workgroups": [1, 2, 3, 4]},
        {"workgroups": [0]},
        {"workgroups": [2.0, 1]},
        {"workgroups": "x"},
        {"inputs": [0]},
        {"inputs": [0, 1, 0]},
        {"inputs": [0, 99]},
        {"inputs": "0"},
        {"inputs": [0, -1]},
        {"results": []},
        {"results": [{"name": "o", "shape": [4]}]},
        {"results": [{"name": "o", "shape": [0], "dtype": "float32"}]},
        {"results": [{"name": "1o", "shape": [4], "dtype": "float32"}]},
        {"results": [{"name": "o", "shape": [4], "dtype": "float64"}]},
        {"results": [{"name": "o", "shape": [4], "dtype": "int32"}]},
        {
            "results": [
                {"name": "o", "shape": [4], "dtype": "float32"},
                {"name": "o", "shape": [4], "dtype": "float32"},
            ]
        },
        {"results": [{"name": "o", "shape": [4], "dtype": "float32", "x": 1}]},
        {"source": "x" * (1024 * 1024 + 1)},
        {"source": ""},
        {"source": 7},
        {"extra": 1},
    ]
    out += [_graph(SAXPY, **v) for v in variants]
    wrong_index = _graph(SAXPY)
    wrong_index["nodes"][3]["index"] = 1
    not_wgsl = _graph(SAXPY)
    not_wgsl["nodes"][3]["a"] = 0
    old = _graph(SAXPY)
    old["version"] = 3
    return [*out, wrong_index, not_wgsl, old]


def test_scanners_and_validators_agree_on_the_corpus() -> None:
    graphs = _graphs()
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", JS],
        cwd=ROOT,
        check=True,
        input=json.dumps({"sources": SOURCES, "graphs": graphs}),
        capture_output=True,
        text=True,
    )
    js = json.loads(proc.stdout)
    for source, scan in zip(SOURCES, js["scans"], strict=True):
        assert scan_wgsl(source) == scan, source[:80]
    codes = set()
    for graph, got in zip(graphs, js["checks"], strict=True):
        want = _py_check(graph)
        assert "crash" not in got, got
        if not OWN_WORDS.search(want.get("message", "")):  # the generic checks' words differ
            want.pop("message", None)
            got.pop("message", None)
        assert want == got, (graph["nodes"][2], want, got)
        codes.add(want.get("code", "ok"))
    assert codes == {"ok", "VALIDATION", "LIMIT", "UNSUPPORTED_VERSION"}


def test_saxpy_scan_reads_the_convention() -> None:
    scan = scan_wgsl(SAXPY)
    assert [
        (v["binding"], v["space"], v["access"], v["name"], v["type"]) for v in scan["vars"]
    ] == [
        (0, "storage", "read", "x", "array<f32>"),
        (1, "storage", "read", "y", "array<f32>"),
        (2, "storage", "read_write", "out", "array<f32>"),
        (3, "uniform", "", "p", "Params"),
    ]
    assert scan["structs"] == [
        {
            "name": "Params",
            "line": 4,
            "members": [{"name": "a", "type": "f32"}, {"name": "n", "type": "u32"}],
        }
    ]
    assert scan["computeEntries"] == ["main"]


def test_binding_mismatch_names_the_binding_and_line() -> None:
    got = _py_check(_graph(SAXPY.replace("read> y", "read_write> y")))
    assert got["code"] == "VALIDATION" and got["node"] == 5
    assert "at line 2, column 1: @binding(1) is input 1 (node 1, float32)" in got["message"]
    assert got["message"].endswith(
        "   2 | @group(0) @binding(1) var<storage, read_write> y: array<f32>;"
    )


QUOTA_JS = """
import { validateGraph } from './backends-js/src/validate.mjs';
import { graphCost } from './backends-js/src/quotas.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
process.stdout.write(JSON.stringify(JSON.parse(text).map((g) => graphCost(validateGraph(g)))));
"""


def test_quota_costs_of_student_graphs_agree() -> None:
    """A wgsl node costs all its results' memory and one pipeline per source; wgsl_output is a
    view (no memory, no pipeline): the same numbers in both twins."""
    from gpulab.graph import Graph
    from gpulab.quotas import graph_cost

    g = Graph()
    x = g.tensor([1.0, 2.0, 3.0, 4.0])
    two = SAXPY.replace(
        "struct Params",
        "@group(0) @binding(3) var<storage, read_write> o2: array<u32>;\nstruct Params",
    ).replace("@binding(3) var<uniform>", "@binding(4) var<uniform>")
    a, b = g.wgsl(
        two,
        inputs=[x, x],
        outputs={"out": ((4,), "float32"), "o2": ((8,), "uint32")},
        params={"a": 1.0, "n": 4},
    )
    c = g.wgsl(SAXPY, inputs=[a, a], outputs={"out": ((4,), "float32")}, params={"a": 2.0, "n": 4})
    graphs = [g.to_dict(a=a, b=b, c=c), g.to_dict(b=b)]
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", QUOTA_JS],
        cwd=ROOT,
        check=True,
        input=json.dumps(graphs),
        capture_output=True,
        text=True,
    )
    js = json.loads(proc.stdout)
    py = [graph_cost(validate(gr)) for gr in graphs]
    assert [[c["memoryBytes"], c["buffers"], c["pipelines"]] for c in js] == [
        [c["memory_bytes"], c["buffers"], c["pipelines"]] for c in py
    ]
    # x (16 B) + the first kernel's 16 + 32 B + the second's 16 B; two sources, two pipelines
    assert py[0] == {"memory_bytes": 80, "buffers": 4, "pipelines": 2}


# sources with loops for the loop-budget twins (wgsl_budget.py, wgsl-budget.mjs)
LOOPS = [
    "fn f() { loop { if (x) { break; } continuing { i++; } } }",
    "fn f() {\n  for (var i = 0u; i < (n + (2u)); i++) {\n    while (a < b) { a++; }\n  }\n}",
    "fn f() { for(;;){} while(true){} loop{} }",
    "fn f() { for_x = 1; loops(); whiles = 2; xfor(); }",
    "fn f() { /* for (;;) { */ // while (x) {\n loop /* c */ { } }",
    "fn f() { \u00e9for (x) {} for\u00e9 {} for\u2028(;;)\u2028{} }",
    "fn f() { for (var i = 0; i < 3; i++ }",
    "fn f() { while x; loop ; for",
    "for" * 300,
    "fn f() {" + "loop {" * 200,
    "loop {} fn f() { loop {} } for (;;) {} fn g(a: u32) -> u32 { return 1u; } fn h(",
    "fn f(x: vec2<f32>) -> vec2<f32> { for (var i = 0; i < 2; i++) {} return x; }",
    "fn f() { for (;;) { workgroupBarrier(); } } fn g() { loop { } }",
    "fn f() { loop { x = subgroupAdd(1); } } fn g() { while (true) { } }",
    (
        "fn f() { @diagnostic(off, derivative_uniformity) for (;;) @diagnostic(off, x) { }\n"
        "  g(a) loop @ a { } while (b) @d { } @e\nloop{} @(x) loop {} ( while {}"
    ),
]
BUDGET_JS = """
import { budgetLoops } from './backends-js/src/wgsl-budget.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
process.stdout.write(JSON.stringify(JSON.parse(text).map((s) => budgetLoops(s, 65534, 7))));
"""


def test_loop_budget_rewrites_agree_on_the_corpus() -> None:
    """Both twins insert the same text at the same places (JS offsets are UTF-16 units, so the
    texts are compared, not the offsets) and find the same loops; the rewrite adds no line
    before the student's last one."""
    from gpulab.wgsl_budget import budget_loops

    sources = SOURCES + LOOPS
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", BUDGET_JS],
        cwd=ROOT,
        check=True,
        input=json.dumps(sources),
        capture_output=True,
        text=True,
    )
    loops = []
    for source, js in zip(sources, json.loads(proc.stdout), strict=True):
        py = budget_loops(source, 65534, 7)
        assert py.source == js["source"], source[:80]
        assert py.loops == js["loops"] and [i.text for i in py.insertions] == [
            i["text"] for i in js["insertions"]
        ]
        # nothing inserted holds a newline: the flag's declaration is the only new line
        assert py.source.count("\n") == source.count("\n") + (3 if py.loops else 0)
        loops.append(py.loops)
    # a source with a barrier breaks on its per-loop counters only (uniform control flow)
    stops = [" || _gpulab_iters > 65534u" in budget_loops(s, 65534, 7).source for s in LOOPS[-3:-1]]
    assert stops == [False, False]
    assert " || _gpulab_iters > 65534u" in budget_loops(LOOPS[0], 65534, 7).source
    assert loops[len(SOURCES) :] == [1, 2, 3, 0, 1, 1, 0, 0, 0, 200, 1, 1, 2, 2, 6]


def test_loop_budget_column_maps_back() -> None:
    from gpulab.wgsl_budget import budget_loops, original_column

    src = "fn f() {\n  for (;;) { let x = 1; }\n}"
    b = budget_loops(src, 10, 3)
    line = b.source.split("\n")[1]
    at = line.index("let x") + 1  # the compiler's column in the budgeted text
    assert original_column(src, b.insertions, 2, at) == src.split("\n")[1].index("let x") + 1
    assert original_column(src, b.insertions, 2, 3) == 3  # before any insertion
    assert original_column(src, b.insertions, 1, 4) == 4  # another line
