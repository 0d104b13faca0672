"""The two validators are twins: gpulab.protocol.validate and backends-js validateGraph give the
same first error (code and node) or the same checked graph (required version, execution order,
shapes, dtypes) on thousands of randomly built and mutated graphs; dtype and version messages
are the same word for word. One node process checks each test's graphs (node is required:
`make test` runs the JS tests with it too).

Agreement is only worth something where both outcomes occur, so each test also requires, of
its graphs, at least one accepted and one refused, one of each message the test compares word
for word, and each op it is about both in an accepted and in a refused graph: properties, not
counts tuned to a seed."""

from __future__ import annotations

import copy
import json
import random
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
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

# messages both validators word the same, by kind: dtype constraints, data per dtype, versions
SAME_TEXT_KINDS = {
    "operand dtype": r"operand \w+ must be (float32|int32|uint32|bool)",
    "data dtype": r"is not an? (int32|uint32|bool)",
    "version": r"needs version",
    "data size": r"data has",
}


def any_of(kinds: dict[str, str]) -> str:
    return "|".join(f"(?:{pattern})" for pattern in kinds.values())


SAME_TEXT = any_of(SAME_TEXT_KINDS)
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
    """8 nodes; `select`: the v3 select ops are among the choices (a separate test)."""
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


def select_nodes(
    rng: random.Random,
    node_id: int,
    earlier: list[int],
    operand: Callable[[str], int] | None = None,
) -> list[dict]:
    """The v3 select ops with good and bad operands and attributes; `operand(role)`
    picks the node for a role ("a", "b", "cond", "counter"), any earlier one by default."""
    pick = rng.choice
    of = operand or (lambda role: pick(earlier))
    return [
        {"id": node_id, "op": pick(SELECT_BINARY), "a": of("a"), "b": of("b")},
        {
            "id": node_id,
            "op": "where",
            "cond": of("cond"),
            "a": of("a"),
            "b": of("b"),
        },
        {
            "id": node_id,
            "op": "cast",
            "a": of("a"),
            "dtype": pick(["float32", "int32", "uint32", "bool", "float64", 1]),
        },
        {
            "id": node_id,
            "op": "hash_uniform",
            "counter": of("counter"),
            "shape": pick([[3], [2, 3], [], [0]]),
            "seed": pick([0, 7, 2**32 - 1, -1, 2**32, 1.5]),
        },
        {
            "id": node_id,
            "op": "dropout",
            "a": of("a"),
            "counter": of("counter"),
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


def python_view(graph: dict, words: str = SAME_TEXT) -> dict:
    try:
        c = validate(graph)
    except GpuLabError as err:
        view: dict = {"code": err.code, "node": err.node}
        if re.search(words, err.message):
            view["message"] = err.message
        return view
    return {
        "ok": True,
        "required": c.required_version,
        "order": c.order,
        "shapes": [[n.id, list(n.shape), n.dtype] for n in c.nodes],
    }


def ops_of(graph: dict) -> set[str]:
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    ops = (n.get("op") for n in nodes if isinstance(n, dict)) if isinstance(nodes, list) else ()
    return {op for op in ops if isinstance(op, str)}


def _agree(graphs: list[dict], message_kinds: dict[str, str] = SAME_TEXT_KINDS) -> Counter:
    """Both validators (and the page's view) agree on every graph, messages matching
    `message_kinds` word for word. Returns what occurred: "ok", "error", "code:<code>",
    "message:<kind>", "dtype" (an accepted graph with a tensor not float32), and per op
    "ok:<op>" / "error:<op>" (the op in an accepted / a refused graph)."""
    words = any_of(message_kinds)
    text = json.dumps(graphs, allow_nan=False)
    graphs = json.loads(text)  # both sides read the same JSON
    js = subprocess.run(
        ["node", "--input-type=module", "-e", JS, words],
        input=text,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    js_views = json.loads(js.stdout)
    seen: Counter = Counter()
    for graph, js_view in zip(graphs, js_views, strict=True):
        page = js_view.pop("page")
        assert "crash" not in js_view, js_view["crash"]
        assert "crash" not in page, page["crash"]
        py_view = python_view(graph, words)
        assert py_view == js_view, json.dumps(graph)
        # the page (None -> undefined) agrees too (hostile-input defects 11 and 17)
        assert {k: v for k, v in py_view.items() if k != "message"} == page, json.dumps(graph)
        outcome = "ok" if "ok" in py_view else "error"
        seen[outcome] += 1
        seen.update(f"{outcome}:{op}" for op in ops_of(graph))
        if outcome == "error":
            seen[f"code:{py_view['code']}"] += 1
        seen["dtype"] += any(s[2] != "float32" for s in py_view.get("shapes", []))
        message = py_view.get("message", "")
        seen.update(
            f"message:{k}" for k, p in message_kinds.items() if message and re.search(p, message)
        )
    return seen


def assert_all_occur(seen: Counter, wanted: list[str]) -> None:
    """Each outcome in `wanted` occurred at least once (else the agreement on it is vacuous)."""
    missing = [w for w in wanted if not seen[w]]
    assert not missing, f"never occurred: {missing}; what did: {dict(sorted(seen.items()))}"


def both_outcomes(ops: list[str] | set[str]) -> list[str]:
    """Each op both in an accepted and in a refused graph."""
    return [f"{outcome}:{op}" for op in sorted(ops) for outcome in ("ok", "error")]


RANDOM_GRAPH_OPS = {
    "input",
    "full",
    *UNARY,
    *BINARY,
    "matmul",
    "sum",
    "softmax",
    "transpose",
    "reshape",
    "permute",
    "cross_entropy",
}


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_python_and_js_validators_agree():
    rng = random.Random(20261130)
    seen = _agree([mutate(random_graph(rng), rng) for _ in range(COUNT)])
    assert_all_occur(
        seen,
        ["ok", "error", "dtype", *(f"message:{kind}" for kind in SAME_TEXT_KINDS)]
        + both_outcomes(RANDOM_GRAPH_OPS),
    )


def random_select_graph(rng: random.Random) -> dict:
    """Three small inputs whose shapes mostly broadcast and whose dtypes often fit, then one
    select op over them: the select ops' own shape and dtype rules, accepted and refused (in
    random_graph's 8-node graphs another node is nearly always wrong first)."""
    pick = rng.choice
    shape = pick([[3], [2, 3], [1, 3], [2, 1]])

    def inp(node_id: int, shape: list, dtype: str) -> dict:
        count = 1
        for d in shape:
            count *= d
        return {"id": node_id, "op": "input", "shape": shape, "dtype": dtype, "data": [0] * count}

    dtype = pick(["float32", "float32", "int32", "uint32"])
    nodes = [
        inp(0, shape, dtype),
        inp(1, pick([shape, shape, [3], [1], [2, 2]]), pick([dtype, dtype, "float32", "bool"])),
        # a condition (bool, a's shape) or a counter (uint32, one element), or neither
        inp(
            2,
            *pick(
                [(shape, "bool"), ([1], "bool"), ([1], "uint32"), ([], "uint32"), (shape, dtype)]
            ),
        ),
    ]
    roles = {"a": 0, "b": 1, "cond": 2, "counter": 2}  # mostly the node made for the role
    node = pick(select_nodes(rng, 3, [0, 1, 2], lambda role: pick([roles[role]] * 3 + [0, 1, 2])))
    return {
        "version": pick([2, 3, 3, 3]),
        "nodes": [*nodes, node],
        "outputs": [{"name": "y", "id": 3}],
    }


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_validators_agree_on_the_select_ops():
    """maximum..ge, where, cast, hash_uniform, dropout among the random nodes, and
    in small graphs of their own."""
    rng = random.Random(20261201)
    graphs = [mutate(random_graph(rng, select=True), rng) for _ in range(COUNT)]
    graphs += [random_select_graph(rng) for _ in range(COUNT)]  # unmutated: most would fail
    seen = _agree(graphs)
    assert_all_occur(
        seen, ["ok", "error", "dtype", "message:operand dtype"] + both_outcomes(SELECT_OPS)
    )


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


V4_OPS = {
    "slice",
    "slice_scatter",
    "index_select",
    "gather",
    "index_add",
    "scatter_add",
    "concat",
    "pad",
}
# the index-data and variadic errors, worded alike
V4_WORDS = {
    **SAME_TEXT_KINDS,
    "index range": r"out of range for axis",
    "variadic": r"must be a list of \d to \d node ids",
}


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_python_and_js_validators_agree_on_v4_ops():
    """Both validators give the same first error (code, node) or the same checked graph on 3000
    random v4 graphs (mutated too), and word their index-data and variadic errors alike."""
    rng = random.Random(20261201)
    seen = _agree([mutate(random_v4_graph(rng), rng) for _ in range(3000)], V4_WORDS)
    assert_all_occur(
        seen, ["ok", "error", "message:index range", "message:variadic"] + both_outcomes(V4_OPS)
    )


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
                # past max_elements; past max_resize_product along H (checked first) when H >= 2
                "size": pick(V6_PAIRS[:6] + [[10**5, 10**5], [2**28, 1]]),
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


WINDOW_OPS = {"conv2d", "max_pool2d", "avg_pool2d", "resize"}
# the shape rules' words (attribute messages differ in form between the twins, by design)
V6_WORDS = {
    **SAME_TEXT_KINDS,
    "channels per group": r"input channels per group",
    "divides": r"does not divide",
    "kernel span": r"the kernel spans",
    "empty window": r"holds no element",
    "pair form": r"must be \[",
    "macs limit": r"max_macs_per_node",
    "resize limit": r"max_resize_product",
}


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_python_and_js_validators_agree_on_v6_ops():
    """Both validators give the same first error (code, node) or the same checked graph on 3000
    random v6 graphs (mutated too), and word the shape rules' refusals alike."""
    rng = random.Random(20261218)
    seen = _agree([mutate(random_v6_graph(rng), rng) for _ in range(3000)], V6_WORDS)
    # a MAC count past max_macs_per_node needs inputs of some 2^26 elements: bad_graphs.json has
    # those graphs (e2e/test_bad_graphs.py checks both validators on them)
    window_messages = [
        f"message:{kind}" for kind in V6_WORDS if kind not in {*SAME_TEXT_KINDS, "macs limit"}
    ]
    assert_all_occur(
        seen, ["ok", "error", "code:LIMIT", *window_messages] + both_outcomes(WINDOW_OPS)
    )
