"""The two validators are twins: gpulab.protocol.validate and backends-js validateGraph give the
same first error (code and node) or the same checked graph (required version, execution order,
shapes, dtypes) on 2000 randomly built and mutated graphs; dtype and version messages are
the same word for word. One node process checks them all (node is
required: `make test` runs the JS tests with it too)."""

from __future__ import annotations

import copy
import json
import random
import re
import subprocess
from pathlib import Path

from gpulab.errors import GpuLabError
from gpulab.kernel_table import plain_ops
from gpulab.protocol import validate

ROOT = Path(__file__).resolve().parents[2]
COUNT = 2000
JS = """
import { validateGraph } from './backends-js/src/validate.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
// The page's view of a graph built in Python: Pyodide turns None into undefined.
const undef = (v) => (v === null ? undefined : Array.isArray(v) ? v.map(undef)
  : typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, undef(x)]))
  : v);
const check = (g, messages) => {
  try {
    const c = validateGraph(g);
    return { ok: true, required: c.requiredVersion, order: c.order,
             shapes: c.nodes.map((n) => [n.id, n.shape, n.dtype]) };
  } catch (e) {
    if (!e || typeof e.code !== 'string') return { crash: String(e && e.stack || e) };
    const view = { code: e.code, node: e.node ?? null };
    if (messages && new RegExp(process.argv[1]).test(e.message)) view.message = e.message;
    return view;
  }
};
const out = JSON.parse(text).map((g) => ({ ...check(g, true), page: check(undef(g), false) }));
process.stdout.write(JSON.stringify(out));
"""

# messages both validators word the same: dtype constraints, data per dtype, versions
SAME_TEXT = (
    r"operand \w+ must be (float32|int32|uint32|bool)|is not an? (int32|uint32|bool)"
    r"|needs version|data has"
)
# From the kernel table (the hand-kept list had drifted to 7 of the 9 unary ops).
UNARY = plain_ops("map1")
BINARY = plain_ops("map2", "broadcast")
JUNK = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2,
    3,
    1.5,
    2.0,
    1e9,
    -7,
    "",
    "x",
    "nan",
    "inf",
    "add",
    "input",
    "float32",
    [],
    [0],
    [1],
    [2, 3],
    [-1],
    [1, -1],
    [0, 1],
    [1.5],
    ["1"],
    [[1]],
    {},
    {"a": 1},
    [1, 1, 1, 1, 1],
    [2, 2, 2, 2],
    [None],
    [2, None],
    2**53,
    2**53 + 1,
    "__proto__",
]


def random_graph(rng: random.Random, select: bool = False) -> dict:
    """8 nodes; `select`: the v3 select ops are among the choices (a separate test, so the
    first test's graphs stay those its counts were measured on)."""
    shapes = [[], [3], [2, 3], [1, 3], [2, 1], [2, 2, 3], [3, 2]]
    ids = rng.sample(range(40), 8)
    nodes: list[dict] = []
    for i, node_id in enumerate(ids):
        earlier = [n["id"] for n in nodes]
        kind = rng.random() if earlier else 0.0
        if kind < 0.3:
            shape = rng.choice(shapes)
            count = 1
            for d in shape:
                count *= d
            dtype = rng.choice(["float32"] * 6 + ["int32", "uint32", "bool"])
            if dtype != "float32":
                junk = [2, -1, 2.5, True] if rng.random() < 0.3 else []
                nodes.append(
                    {
                        "id": node_id,
                        "op": "input",
                        "shape": shape,
                        "dtype": dtype,
                        "data": [rng.choice([0, 1, *junk]) for _ in range(count)],
                    }
                )
            elif rng.random() < 0.5:
                nodes.append(
                    {
                        "id": node_id,
                        "op": "input",
                        "shape": shape,
                        "data": [rng.choice([0.5, -1, 2, "nan", "-inf"]) for _ in range(count)],
                    }
                )
            else:
                nodes.append({"id": node_id, "op": "full", "shape": shape, "value": 1.5})
        elif kind < 0.5:
            nodes.append({"id": node_id, "op": rng.choice(UNARY), "a": rng.choice(earlier)})
        elif kind < 0.75:
            nodes.append(
                {
                    "id": node_id,
                    "op": rng.choice(BINARY + ["matmul"]),
                    "a": rng.choice(earlier),
                    "b": rng.choice(earlier),
                }
            )
        else:
            nodes.append(
                rng.choice(
                    [
                        {
                            "id": node_id,
                            "op": "sum",
                            "a": rng.choice(earlier),
                            "axis": rng.choice([None, 0, -1, 1]),
                            "keepdim": rng.random() < 0.3,
                        },
                        {"id": node_id, "op": "softmax", "a": rng.choice(earlier)},
                        {"id": node_id, "op": "transpose", "a": rng.choice(earlier)},
                        {
                            "id": node_id,
                            "op": "reshape",
                            "a": rng.choice(earlier),
                            "shape": rng.choice([[-1], [3, -1], [6], [1, -1]]),
                        },
                        {
                            "id": node_id,
                            "op": "permute",
                            "a": rng.choice(earlier),
                            "dims": rng.choice([[1, 0], [0], [2, 0, 1]]),
                        },
                        {
                            "id": node_id,
                            "op": "cross_entropy",
                            "a": rng.choice(earlier),
                            "b": rng.choice(earlier),
                        },
                        *(select_nodes(rng, node_id, earlier) if select else []),
                    ]
                )
            )
    rng.shuffle(nodes)
    outputs = [{"name": f"o{k}", "id": i} for k, i in enumerate(rng.sample(ids, 2))]
    return {"version": rng.choice([1, 2, 2, 3, 3]), "nodes": nodes, "outputs": outputs}


SELECT_BINARY = ["maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"]
SELECT_OPS = {*SELECT_BINARY, "where", "cast", "hash_uniform", "dropout"}


def select_nodes(rng: random.Random, node_id: int, earlier: list[int]) -> list[dict]:
    """The v3 select ops with good and bad operands and attributes."""
    pick = rng.choice
    return [
        {"id": node_id, "op": pick(SELECT_BINARY), "a": pick(earlier), "b": pick(earlier)},
        {
            "id": node_id,
            "op": "where",
            "cond": pick(earlier),
            "a": pick(earlier),
            "b": pick(earlier),
        },
        {
            "id": node_id,
            "op": "cast",
            "a": pick(earlier),
            "dtype": pick(["float32", "int32", "uint32", "bool", "float64", 1]),
        },
        {
            "id": node_id,
            "op": "hash_uniform",
            "counter": pick(earlier),
            "shape": pick([[3], [2, 3], [], [0]]),
            "seed": pick([0, 7, 2**32 - 1, -1, 2**32, 1.5]),
        },
        {
            "id": node_id,
            "op": "dropout",
            "a": pick(earlier),
            "counter": pick(earlier),
            "p": pick([0, 0.5, 0.99999994, 1, 0.99999999, -0.1, "0.5"]),
            "seed": pick([0, 3, -1]),
        },
    ]


def mutate(graph: dict, rng: random.Random) -> dict:
    g = copy.deepcopy(graph)
    for _ in range(rng.choice([0, 1, 1, 2])):
        where = rng.random()
        if where < 0.15:
            g[rng.choice(["version", "nodes", "outputs"])] = rng.choice(JUNK)
            return g
        if where < 0.3 and isinstance(g["outputs"], list) and g["outputs"]:
            out = rng.choice(g["outputs"])
            out[rng.choice(["name", "id", "extra"])] = rng.choice(JUNK)
            continue
        node = rng.choice(g["nodes"])
        key = rng.choice([k for k in node] + ["axis", "shape", "b", "data", "junk"])
        if rng.random() < 0.2:
            node.pop(key, None)
        else:
            node[key] = rng.choice(JUNK + [n.get("id") for n in g["nodes"]])
    return g


def python_view(graph: dict) -> dict:
    try:
        c = validate(graph)
    except GpuLabError as err:
        view: dict = {"code": err.code, "node": err.node}
        if re.search(SAME_TEXT, err.message):
            view["message"] = err.message
        return view
    return {
        "ok": True,
        "required": c.required_version,
        "order": c.order,
        "shapes": [[n.id, list(n.shape), n.dtype] for n in c.nodes],
    }


def _agree(graphs: list[dict]) -> dict[str, int]:
    """Both validators (and the page's view) agree on every graph; counts of the outcomes."""
    text = json.dumps(graphs, allow_nan=False)
    graphs = json.loads(text)  # both sides read the same JSON
    js = subprocess.run(
        ["node", "--input-type=module", "-e", JS, SAME_TEXT],
        input=text,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    js_views = json.loads(js.stdout)
    kinds = {"ok": 0, "error": 0, "dtype": 0, "message": 0}
    for graph, js_view in zip(graphs, js_views, strict=True):
        page = js_view.pop("page")
        assert "crash" not in js_view, js_view["crash"]
        assert "crash" not in page, page["crash"]
        py_view = python_view(graph)
        assert py_view == js_view, json.dumps(graph)
        # the page (None -> undefined) agrees too (hostile-input defects 11 and 17)
        assert {k: v for k, v in py_view.items() if k != "message"} == page, json.dumps(graph)
        kinds["ok" if "ok" in py_view else "error"] += 1
        kinds["message"] += "message" in py_view
        kinds["dtype"] += any(s[2] != "float32" for s in py_view.get("shapes", []))
    return kinds


def test_python_and_js_validators_agree():
    rng = random.Random(20261130)
    kinds = _agree([mutate(random_graph(rng), rng) for _ in range(COUNT)])
    # the corpus exercises both outcomes, so agreement is not vacuous (47 valid graphs of 2000
    # at seed 20261130 since UNARY is every map1 op: log and sigmoid need version 2)
    assert kinds["ok"] >= 40 and kinds["error"] >= 300, kinds
    assert kinds["dtype"] >= 10 and kinds["message"] >= 100, kinds


def test_validators_agree_on_the_select_ops():
    """maximum..ge, where, cast, hash_uniform, dropout among the random nodes."""
    rng = random.Random(20261201)
    graphs = [mutate(random_graph(rng, select=True), rng) for _ in range(COUNT)]
    used = sum(
        any(str(n.get("op")) in SELECT_OPS for n in g["nodes"] if isinstance(n, dict))
        for g in graphs
        if isinstance(g, dict) and isinstance(g.get("nodes"), list)
    )
    kinds = _agree(graphs)
    assert used >= 1000, used
    assert kinds["ok"] >= 20 and kinds["error"] >= 300 and kinds["message"] >= 100, kinds


# ---- protocol v4: the selection ops (their shape rules, the variadic operand, index data)

V4_SLICES = [
    [[None, None, None]],
    [[1, None, 2]],
    [[None, None, -1], [0, 2, 1]],
    [[5, 9, 1]],
    [[0, 1, 0]],
    [[-1, -3, -1], [None, None, -2]],
    [[0, 1]],
    [[2, 2, 1], [None, None, 1]],
    [[-100, 100, 1], [1.0, None, None]],
]


def random_v4_graph(rng: random.Random) -> dict:
    """A small graph of v4 ops: data x (float32 or int32), int32 indices i (mostly in range), a
    source s shaped like x (mostly), then one or two v4 ops over them."""
    pick = rng.choice
    shape = pick([[3], [2, 3], [3, 2], [2, 1, 3], [2, 2]])
    dtype = pick(["float32", "int32"])

    def inp(node_id: int, shape: list, dtype: str, values: list) -> dict:
        count = 1
        for d in shape:
            count *= d
        return {
            "id": node_id,
            "op": "input",
            "shape": shape,
            "dtype": dtype,
            "data": [pick(values) for _ in range(count)],
        }

    nodes = [
        inp(0, shape, dtype, [0, 1, -2]),
        inp(
            1,
            pick([[2], [1], shape, [1] * len(shape), [3]]),
            pick(["int32"] * 5 + ["float32"]),
            pick([[0, 1], [0, 1], [0, 1, 2, -1]]),
        ),
        inp(2, pick([shape, shape, [2], [1, 3]]), pick([dtype, dtype, "int32"]), [1, 2]),
    ]
    axis = pick([0, 0, -1, 1, 2, None, 1.5])
    sl = pick(
        V4_SLICES[:3] + [[[None, None, -1]] * len(shape), [[0, 1, 1]] * len(shape)] + V4_SLICES[3:]
    )
    for node_id in (3, 4) if rng.random() < 0.3 else (3,):
        x = pick([0, 0, node_id - 1]) if node_id == 4 else 0
        nodes.append(
            pick(
                [
                    {"id": node_id, "op": "slice", "a": x, "slices": sl},
                    {
                        "id": node_id,
                        "op": "slice_scatter",
                        "a": x,
                        "src": pick([0, 2]),
                        "slices": sl,
                    },
                    {"id": node_id, "op": "index_select", "a": x, "idx": 1, "axis": axis},
                    {"id": node_id, "op": "gather", "a": x, "idx": 1, "axis": axis},
                    {
                        "id": node_id,
                        "op": "index_add",
                        "a": x,
                        "idx": 1,
                        "src": pick([0, 2]),
                        "axis": axis,
                    },
                    {
                        "id": node_id,
                        "op": "scatter_add",
                        "a": x,
                        "idx": 1,
                        "src": pick([1, 2]),
                        "axis": axis,
                    },
                    {
                        "id": node_id,
                        "op": "concat",
                        "axis": axis,
                        "tensors": [pick([0, 0, 2]) for _ in range(pick([1, 2, 3, 8, 9]))],
                    },
                    {
                        "id": node_id,
                        "op": "pad",
                        "a": x,
                        "widths": pick([[[1, 0]] * len(shape), [[0, 0], [2, 1]], [[0, -1]]]),
                        "value": pick([0, -1, 2.5, "nan", 2**31]),
                    },
                ]
            )
        )
    return {
        "version": pick([3, 4, 4, 4]),
        "nodes": nodes,
        "outputs": [{"name": "y", "id": nodes[-1]["id"]}],
    }


def test_python_and_js_validators_agree_on_v4_ops():
    """Both validators give the same first error (code, node) or the same checked graph on 3000
    random v4 graphs (mutated too), and word their index-data and variadic errors alike."""
    rng = random.Random(20261201)
    graphs = [mutate(random_v4_graph(rng), rng) for _ in range(3000)]
    text = json.dumps(graphs, allow_nan=False)
    graphs = json.loads(text)
    words = SAME_TEXT + r"|out of range for axis|must be a list of \d to \d node ids"
    js = subprocess.run(
        ["node", "--input-type=module", "-e", JS, words],
        input=text,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    kinds = {"ok": 0, "error": 0, "index": 0, "variadic": 0}
    for graph, js_view in zip(graphs, json.loads(js.stdout), strict=True):
        page = js_view.pop("page")
        assert "crash" not in js_view, js_view["crash"]
        try:
            c = validate(graph)
            py_view: dict = {
                "ok": True,
                "required": c.required_version,
                "order": c.order,
                "shapes": [[n.id, list(n.shape), n.dtype] for n in c.nodes],
            }
        except GpuLabError as err:
            py_view = {"code": err.code, "node": err.node}
            if re.search(words, err.message):
                py_view["message"] = err.message
        assert py_view == js_view, json.dumps(graph)
        assert {k: v for k, v in py_view.items() if k != "message"} == page, json.dumps(graph)
        kinds["ok" if "ok" in py_view else "error"] += 1
        kinds["index"] += "out of range for axis" in py_view.get("message", "")
        kinds["variadic"] += "node ids" in py_view.get("message", "")
    # at seed 20261201: 112 valid, 2888 refused, 8 index-data and 77 variadic messages
    assert kinds["ok"] >= 100 and kinds["error"] >= 1000, kinds
    assert kinds["index"] >= 5 and kinds["variadic"] >= 50, kinds


# ---- protocol v6: the window ops (conv2d's variadic bias, pairs, padding, modes)

V6_PAIRS = [[1, 1], [2, 1], [1, 3], [2, 2], [3, 3], [0, 1], [1], [1, 2, 3], [1.5, 1], [-1, 2]]
V6_PADS = [
    [0, 0, 0, 0],
    [1, 1, 1, 1],
    [0, 2, 1, 0],
    [3, 3, 3, 3],
    [1, 1],
    [0, 0, -1, 0],
    [5, 0, 0, 0],
]


def random_v6_graph(rng: random.Random) -> dict:
    """A small graph of one or two window ops over x [N, C, H, W] (sometimes the wrong rank),
    a weight w (often of the right channel count), a bias b: every shape rule's refusals
    (channels, groups, kernels past the padded input, empty pooling windows) and successes."""
    pick = rng.choice
    n, c = pick([1, 2]), pick([1, 2, 4, 6])
    x_shape = pick([[n, c, 5, 6], [n, c, 3, 3], [n, c, 8, 4], [c, 5, 5], [n, c, 1, 7]])
    m = pick([2, 4, 6, 3])
    cg = pick([c, 1, 2, c])
    w_shape = pick([[m, cg, 3, 3], [m, cg, 1, 1], [m, cg, 2, 4], [m, cg, 6, 6], [m, cg, 3]])

    def inp(node_id: int, shape: list, dtype: str = "float32") -> dict:
        count = 1
        for d in shape:
            count *= d
        return {"id": node_id, "op": "input", "shape": shape, "dtype": dtype, "data": [0.5] * count}

    nodes = [
        inp(0, x_shape, pick(["float32"] * 9 + ["int32"])),
        inp(1, w_shape),
        inp(2, [pick([m, m, 3])]),
    ]
    window = {
        "strides": pick(V6_PAIRS[:5] + V6_PAIRS),
        "padding": pick(V6_PADS),
        "dilations": pick(V6_PAIRS[:3] + [[2, 2]]),
    }
    for node_id in (3, 4) if rng.random() < 0.3 else (3,):
        x = pick([0, 0, node_id - 1]) if node_id == 4 else 0
        options = [
            {
                "id": node_id,
                "op": "conv2d",
                "a": x,
                "w": 1,
                "bias": pick([[], [2], [2, 2], 2]),
                "groups": pick([1, 1, 2, c, 3, 0]),
                **window,
            },
            {
                "id": node_id,
                "op": "max_pool2d",
                "a": x,
                "kernel": pick(V6_PAIRS),
                "ceil_mode": pick([False, True]),
                **window,
            },
            {
                "id": node_id,
                "op": "avg_pool2d",
                "a": x,
                "kernel": pick(V6_PAIRS),
                "count_include_pad": pick([False, True, 1]),
                "ceil_mode": pick([False, True]),
                **window,
            },
            {
                "id": node_id,
                "op": "resize",
                "a": x,
                "size": pick(V6_PAIRS[:6] + [[10**5, 10**5]]),
                "mode": pick(["nearest", "linear", "cubic"]),
                "coordinate_transformation_mode": pick(
                    [
                        "half_pixel",
                        "asymmetric",
                        "align_corners",
                        "pytorch_half_pixel",
                        "tf_crop_and_resize",
                    ]
                ),
                "nearest_mode": pick(
                    ["floor", "ceil", "round_prefer_floor", "round_prefer_ceil", "round"]
                ),
            },
        ]
        nodes.append(pick(options))
    return {
        "version": pick([5, 6, 6, 6]),
        "nodes": nodes,
        "outputs": [{"name": "y", "id": nodes[-1]["id"]}],
    }


def test_python_and_js_validators_agree_on_v6_ops():
    """Both validators give the same first error (code, node) or the same checked graph on 3000
    random v6 graphs (mutated too), and word the shape rules' refusals alike."""
    rng = random.Random(20261218)
    graphs = [mutate(random_v6_graph(rng), rng) for _ in range(3000)]
    # the shape rules' words (attribute messages differ in form between the twins, by design)
    words = (
        SAME_TEXT + r"|input channels per group|does not divide|the kernel spans"
        r"|holds no element|must be \[|max_macs_per_node|max_resize_product"
    )
    text = json.dumps(graphs, allow_nan=False)
    graphs = json.loads(text)
    js = subprocess.run(
        ["node", "--input-type=module", "-e", JS, words],
        input=text,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    kinds = {"ok": 0, "error": 0, "message": 0, "LIMIT": 0}
    for graph, js_view in zip(graphs, json.loads(js.stdout), strict=True):
        page = js_view.pop("page")
        assert "crash" not in js_view, js_view["crash"]
        assert "crash" not in page, page["crash"]
        try:
            c = validate(graph)
            py_view: dict = {
                "ok": True,
                "required": c.required_version,
                "order": c.order,
                "shapes": [[n.id, list(n.shape), n.dtype] for n in c.nodes],
            }
        except GpuLabError as err:
            py_view = {"code": err.code, "node": err.node}
            if re.search(words, err.message):
                py_view["message"] = err.message
        assert py_view == js_view, json.dumps(graph)
        assert {k: v for k, v in py_view.items() if k != "message"} == page, json.dumps(graph)
        kinds["ok" if "ok" in py_view else "error"] += 1
        kinds["message"] += "message" in py_view
        kinds["LIMIT"] += py_view.get("code") == "LIMIT"
    # at seed 20261218: 41 valid, 2959 refused, 403 shape-rule messages, 12 LIMIT
    assert kinds["ok"] >= 30 and kinds["error"] >= 1000 and kinds["message"] >= 300, kinds
    assert kinds["LIMIT"] >= 5, kinds
