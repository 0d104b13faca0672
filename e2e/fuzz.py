"""The fuzz lane: random and mutated graphs from the op table, run through both
validators and the cpu, wasm (JS) and cpu-python executors.

Every graph must give, on every side, a protocol answer: a result or a GpuLabError with a code
of the op table, never another exception. The two validators must agree (code and node of the
first error, or required version, order, shapes and dtypes), and a graph the validators accept
must run on cpu-python and on the JS cpu and wasm backends (or be refused with UNSUPPORTED /
LIMIT) with outputs of the same shapes and dtypes. Values are not compared here: the corpus
(pylib/gpulab/conformance) judges numerics with tolerances.

`make test` runs `COUNT` graphs (e2e/test_fuzz.py); a longer run:
    PYTHONPATH=pylib .venv/bin/python -m e2e.fuzz --count 200000 --seed 1
prints a summary and exits 1 on the first disagreement or crash (with the graph).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpulab import optable
from gpulab.errors import GpuLabError

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "e2e" / "fuzz_runner.mjs"
COUNT = 20_000
BATCH = 2_000
CODES = set(optable.load()["error_codes"])
SHAPES = [
    [],
    [1],
    [3],
    [2, 3],
    [3, 2],
    [1, 3],
    [2, 1],
    [2, 2, 3],
    [3, 3],
    [2, 3, 1, 2],
    [1, 2, 3, 3],
]
JUNK: list[Any] = [
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
    "int32",
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
    {"base64": "AAAA"},
    {"base64": "!!"},
    1e300,
    -0.0,
    [3, 0],
]
VALUES = [0, 1, -1, 0.5, -2.5, 3, 7, "nan", "inf", "-inf", 1e30, -1e-30]


def _count(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _source(rng: random.Random, node_id: int) -> dict:
    shape = rng.choice(SHAPES)
    kind = rng.random()
    if kind < 0.25:
        return {"id": node_id, "op": "full", "shape": shape, "value": rng.choice(VALUES)}
    dtype = rng.choice(["float32"] * 8 + ["int32", "int32", "uint32", "bool"])
    node: dict[str, Any] = {"id": node_id, "op": "input", "shape": shape}
    if dtype != "float32" or rng.random() < 0.2:
        node["dtype"] = dtype
    pool = {
        "float32": VALUES,
        "int32": [0, 1, -3, 7, 2147483647],
        "uint32": [0, 1, 4294967295],
        "bool": [0, 1, True, False],
    }[dtype]
    node["data"] = [rng.choice(pool) for _ in range(_count(shape))]
    return node


def _attr(rng: random.Random, kind: str, default: Any) -> Any:
    if kind == "axis":
        return rng.choice([None, 0, 1, -1, 2, -2])
    if kind == "bool":
        return rng.random() < 0.3
    if kind == "float":
        return rng.choice([0.1, 0.9, 0.999, 1e-8, 0.5, 2.0, default if default else 0.01])
    if kind == "optional_float":
        return rng.choice([None, -1.0, 0.0, 0.5, 2.0])
    if kind == "perm":
        return rng.choice([[1, 0], [0], [0, 1, 2], [2, 0, 1], [1, 0, 2, 3]])
    if kind == "reshape":
        return rng.choice([[-1], [3, -1], [6], [1, -1], [2, 3], [3, 2], [1, 6]])
    # the v4 selection ops
    if kind == "slices":
        return rng.choice(
            [
                [[None, None, -1]],
                [[0, 2, 1], [None, None, 2]],
                [[1, None, 1]] * 2,
                [[0, 1, 0]],
                [[-1, None, None]],
                [[5, 9, 1]],
            ]
        )
    if kind == "pad_widths":
        return rng.choice([[[1, 0]], [[0, 0], [1, 2]], [[0, -1]], [[2, 2]] * 3])
    if kind == "int":
        return rng.choice([0, 1, -1, 2, 40])
    if kind == "scalar":
        return rng.choice([0, -1, 2.5, "nan", 2**31])
    # the v6 window ops
    if kind == "pair":
        return rng.choice([[1, 1], [2, 1], [1, 2], [2, 2], [3, 1], [0, 1], [1]])
    if kind == "pads4":
        return rng.choice([[0, 0, 0, 0], [1, 0, 0, 1], [1, 1, 1, 1], [0, 2, 0, 0], [1, 1]])
    if kind == "choice":
        return rng.choice([default, default, "cubic", "linear", "floor", "align_corners"])
    return default


def random_graph(rng: random.Random) -> dict:
    """A graph of 2..10 nodes over the op table's ops, with small shapes; often valid."""
    ops = optable.ops()
    names = [n for n in ops if n not in ("input", "full")]
    ids = rng.sample(range(60), rng.randint(2, 10))
    nodes: list[dict] = []
    for node_id in ids:
        if not nodes or rng.random() < 0.3:
            nodes.append(_source(rng, node_id))
            continue
        op = rng.choice(names)
        row = ops[op]
        node = {"id": node_id, "op": op}
        if "variadic" in row:  # a list of ids (concat's tensors, wgsl's inputs)
            node[row["variadic"]] = [rng.choice(nodes)["id"] for _ in range(rng.randint(1, 3))]
        for operand in row["operands"]:
            node[operand] = rng.choice(nodes)["id"]
        for name, spec in row["attrs"].items():
            if spec.get("required") or rng.random() < 0.5:
                node[name] = _attr(rng, spec["type"], spec.get("default"))
        nodes.append(node)
    if rng.random() < 0.3:
        rng.shuffle(nodes)
    outs = rng.sample([n["id"] for n in nodes], min(len(nodes), rng.randint(1, 3)))
    return {
        "version": rng.choice([1, 2, 3, 3, 3, 4, 4, 6]),
        "nodes": nodes,
        "outputs": [{"name": f"o{k}", "id": i} for k, i in enumerate(outs)],
    }


def mutate(graph: dict, rng: random.Random) -> dict:
    """0..2 hostile edits: a junk value for a field, a dropped field, a junk top level."""
    g = copy.deepcopy(graph)
    for _ in range(rng.choice([0, 0, 0, 1, 1, 2])):
        where = rng.random()
        if where < 0.08:
            g[rng.choice(["version", "nodes", "outputs"])] = rng.choice(JUNK)
            return g
        if where < 0.2 and g["outputs"]:
            out = rng.choice(g["outputs"])
            out[rng.choice(["name", "id", "extra"])] = rng.choice(JUNK)
            continue
        node = rng.choice(g["nodes"])
        key = rng.choice([*node, "axis", "shape", "b", "data", "dtype", "junk"])
        if rng.random() < 0.2:
            node.pop(key, None)
        else:
            node[key] = rng.choice(JUNK + [n.get("id") for n in g["nodes"]])
    return g


def graphs(count: int, seed: int) -> Iterator[dict]:
    rng = random.Random(seed)
    for _ in range(count):
        yield mutate(random_graph(rng), rng)


# ---------------------------------------------------------------------------------------------
# one side: Python


def _error_view(err: BaseException) -> dict:
    if isinstance(err, GpuLabError) and err.code in CODES:
        return {"code": err.code, "node": err.node}
    return {"crash": f"{type(err).__name__}: {err}"}


def python_side(graph: dict) -> dict:
    """{validate: view, run: {lane: view}} natively (cpu-python)."""
    from gpulab import host
    from gpulab.protocol import validate

    try:
        c = validate(graph)
    except Exception as err:  # noqa: BLE001 - a crash is what the lane looks for
        return {"validate": _error_view(err)}
    view = {
        "ok": True,
        "required": c.required_version,
        "order": c.order,
        "shapes": [[n.id, list(n.shape), n.dtype] for n in c.nodes],
    }
    runnable = all(n.op != "input" or n.data is not None for n in c.nodes)
    if not runnable:
        return {"validate": view}
    try:
        result = host.execute(graph, backend="cpu-python")
        ran = {
            "ok": True,
            "outputs": {k: [list(v["shape"]), v["dtype"]] for k, v in result["outputs"].items()},
        }
    except Exception as err:  # noqa: BLE001
        ran = _error_view(err)
    return {"validate": view, "run": {"cpu-python": ran}}


# ---------------------------------------------------------------------------------------------
# both sides, compared


def js_side(batch: list[dict]) -> list[dict]:
    text = json.dumps(batch, allow_nan=False)
    done = subprocess.run(
        ["node", str(RUNNER)],
        input=text,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(done.stdout)


def disagreement(graph: dict, py: dict, js: dict) -> str | None:
    """Why the sides disagree (or crashed), or None."""
    for side, view in (("python", py), ("js", js)):
        for lane, answer in [("validate", view["validate"]), *view.get("run", {}).items()]:
            if "crash" in answer:
                return f"{side} {lane} crashed: {answer['crash']}"
    if py["validate"] != js["validate"]:
        return f"validators differ: python {py['validate']} js {js['validate']}"
    runs = {**py.get("run", {}), **js.get("run", {})}
    done = {lane: r["outputs"] for lane, r in runs.items() if r.get("ok")}
    refused = {lane: r["code"] for lane, r in runs.items() if not r.get("ok")}
    bad = {lane: code for lane, code in refused.items() if code not in ("UNSUPPORTED", "LIMIT")}
    if bad:
        return f"a valid graph failed: {bad}"
    if len({json.dumps(v, sort_keys=True) for v in done.values()}) > 1:
        return f"output shapes/dtypes differ: {done}"
    return None


def run(count: int, seed: int) -> dict[str, Any]:
    """Fuzz `count` graphs; raises AssertionError with the first bad graph."""
    stats = {"graphs": 0, "valid": 0, "ran": 0}
    source = graphs(count, seed)
    while True:
        batch = [g for _, g in zip(range(BATCH), source)]
        if not batch:
            return stats
        batch = json.loads(json.dumps(batch, allow_nan=False))  # both sides read the same JSON
        for graph, js in zip(batch, js_side(batch), strict=True):
            py = python_side(graph)
            why = disagreement(graph, py, js)
            if why:
                raise AssertionError(f"{why}\n{json.dumps(graph)}")
            stats["graphs"] += 1
            stats["valid"] += "ok" in py["validate"]
            stats["ran"] += "run" in py


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--seed", type=int, default=1)
    ns = parser.parse_args(argv)
    try:
        stats = run(ns.count, ns.seed)
    except AssertionError as err:
        print(f"fuzz: {err}", file=sys.stderr)
        return 1
    print(f"fuzz: {stats} (seed {ns.seed}): clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
