"""Prepared sessions on the wgpu executor: an MLP Adam training step (784-256-10 in miniature)
run as 5 session steps equals 5 chained executes bit for bit, whether the steps run one per
`run` or all in one `run`; a multi-step run is one queue submission and one read-back."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gpulab import host
from gpulab.errors import GpuLabError
from gpulab.protocol import validate

pytest.importorskip("wgpu", reason="wgpu-py is not installed")
from gpulab.native.wgpu_executor import open_executor

RNG = np.random.default_rng(7)
BATCH, IN, HIDDEN, OUT = 8, 12, 16, 5
# input id -> output name carried into it after each step
CARRY = {2: "w1n", 3: "w2n", 4: "m1n", 5: "v1n", 6: "m2n", 7: "v2n", 8: "tn"}


def _input(node_id: int, shape: list[int], data: np.ndarray | None) -> dict:
    node: dict = {"id": node_id, "op": "input", "shape": shape}
    if data is not None:
        node["data"] = np.asarray(data, np.float32).reshape(-1).tolist()
    return node


def mlp_adam_graph() -> dict:
    """x[B,IN] @ W1 -> relu -> @ W2 -> cross_entropy(y); backward; Adam on W1 and W2. x and y
    (ids 0, 1) have no data: a session feeds them."""
    w1 = RNG.standard_normal((IN, HIDDEN)).astype(np.float32) * 0.3
    w2 = RNG.standard_normal((HIDDEN, OUT)).astype(np.float32) * 0.3
    zeros = np.zeros
    nodes = [
        _input(0, [BATCH, IN], None),
        _input(1, [BATCH, OUT], None),
        _input(2, [IN, HIDDEN], w1),
        _input(3, [HIDDEN, OUT], w2),
        _input(4, [IN, HIDDEN], zeros(IN * HIDDEN)),
        _input(5, [IN, HIDDEN], zeros(IN * HIDDEN)),
        _input(6, [HIDDEN, OUT], zeros(HIDDEN * OUT)),
        _input(7, [HIDDEN, OUT], zeros(HIDDEN * OUT)),
        _input(8, [1], np.zeros(1)),
        {"id": 9, "op": "full", "shape": [1], "value": 1},
        {"id": 10, "op": "add", "a": 8, "b": 9},  # t + 1
        {"id": 11, "op": "matmul", "a": 0, "b": 2},
        {"id": 12, "op": "relu", "a": 11},
        {"id": 13, "op": "matmul", "a": 12, "b": 3},
        {"id": 14, "op": "cross_entropy", "a": 13, "b": 1},
        {"id": 15, "op": "cross_entropy_grad", "a": 13, "b": 1},
        {"id": 16, "op": "transpose", "a": 12},
        {"id": 17, "op": "matmul", "a": 16, "b": 15},  # dW2
        {"id": 18, "op": "transpose", "a": 3},
        {"id": 19, "op": "matmul", "a": 15, "b": 18},
        {"id": 20, "op": "positive", "a": 11},
        {"id": 21, "op": "mul", "a": 19, "b": 20},
        {"id": 22, "op": "transpose", "a": 0},
        {"id": 23, "op": "matmul", "a": 22, "b": 21},  # dW1
        {"id": 24, "op": "adam_m", "a": 4, "b": 23},
        {"id": 25, "op": "adam_v", "a": 5, "b": 23},
        {"id": 26, "op": "adam_update", "a": 2, "b": 24, "c": 25, "t": 10, "lr": 0.01},
        {"id": 27, "op": "adam_m", "a": 6, "b": 17},
        {"id": 28, "op": "adam_v", "a": 7, "b": 17},
        {"id": 29, "op": "adam_update", "a": 3, "b": 27, "c": 28, "t": 10, "lr": 0.01},
    ]
    outputs = [
        ("loss", 14),
        ("w1n", 26),
        ("w2n", 29),
        ("m1n", 24),
        ("v1n", 25),
        ("m2n", 27),
        ("v2n", 28),
        ("tn", 10),
    ]
    return {"version": 2, "nodes": nodes, "outputs": [{"name": n, "id": i} for n, i in outputs]}


def _batches(count: int) -> list[dict[int, np.ndarray]]:
    out = []
    for _ in range(count):
        x = RNG.standard_normal((BATCH, IN)).astype(np.float32)
        y = np.eye(OUT, dtype=np.float32)[RNG.integers(0, OUT, BATCH)]
        out.append({0: x, 1: y})
    return out


def _chained_executes(graph: dict, batches: list[dict]) -> tuple[list[float], dict]:
    """Each step a fresh execute whose carried inputs hold the previous step's outputs."""
    g = copy.deepcopy(graph)
    by_id = {n["id"]: n for n in g["nodes"]}
    losses, outputs = [], {}
    for batch in batches:
        for node_id, data in batch.items():
            by_id[node_id]["data"] = data.reshape(-1).tolist()
        result = host.execute(g, backend="wgpu", allow_software=True)
        outputs = {k: v["array"] for k, v in result["outputs"].items()}
        losses.append(float(outputs["loss"]))
        for node_id, name in CARRY.items():
            by_id[node_id]["data"] = outputs[name].reshape(-1).tolist()
    return losses, outputs


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a32.shape == b32.shape and np.array_equal(a32.view(np.uint32), b32.view(np.uint32))


def test_five_session_steps_equal_five_chained_executes_bit_for_bit() -> None:
    graph = mlp_adam_graph()
    batches = _batches(5)
    exec_losses, exec_out = _chained_executes(graph, batches)  # x, y given as data there
    assert exec_losses[-1] < exec_losses[0]  # it trains

    session = host.prepare(
        graph,
        feeds=[0, 1],
        carry=CARRY,
        resident=["w1n", "w2n"],
        outputs=["loss"],
        backend="wgpu",
        allow_software=True,
    )
    try:
        losses = [float(session.run(b)["outputs"]["loss"]["array"]) for b in batches]
        assert session.backend == "wgpu"
        assert [np.float32(v) for v in losses] == [np.float32(v) for v in exec_losses]
        for name in ("w1n", "w2n"):
            assert _same_bits(session.download(name)["array"], exec_out[name]), name
    finally:
        session.dispose()

    many = host.prepare(
        graph,
        feeds=[0, 1],
        carry=CARRY,
        resident=["w1n", "w2n"],
        outputs=["loss"],
        backend="wgpu",
        allow_software=True,
    )
    try:
        last = many.run_steps(batches)  # all five in one run
        assert _same_bits(last["outputs"]["loss"]["array"], exec_out["loss"])
        for name in ("w1n", "w2n"):
            assert _same_bits(many.download(name)["array"], exec_out[name]), name
    finally:
        many.dispose()


def test_a_multi_step_run_is_a_submission_per_step_and_one_readback() -> None:
    """Steps are submitted as encoded (the GPU overlaps the host's encoding of the next);
    with steps_per_submit 0 a run is one submission; the bits are the same either way."""
    submits: list[int] = []
    ex = open_executor(True, hooks={"on_submit": submits.append})
    try:
        checked = validate(mlp_adam_graph())
        carry = {i: next(o.id for o in checked.outputs if o.name == n) for i, n in CARRY.items()}
        runs, eight = {}, _batches(8)
        for every in (1, 0):
            ex.hooks["steps_per_submit"] = every
            program = ex.prepare(checked, feeds=[0, 1], carry=carry, keep=[14])
            before = len(submits)
            runs[every] = program.run(eight, [14])[14]
            assert len(submits) - before == (8 if every else 1)
            program.run(_batches(1), [14])
            assert len(submits) - before == (9 if every else 2)
            program.dispose()
        assert ex.counters["readbacks"] == 4
        assert _same_bits(runs[1], runs[0])
    finally:
        ex.dispose()


def _program(ex: object, graph: dict, carry: dict[int, str]) -> object:
    checked = validate(graph)
    ids = {o.name: o.id for o in checked.outputs}
    return ex.prepare(
        checked, feeds=[0, 1], carry={i: ids[n] for i, n in carry.items()}, keep=list(ids.values())
    )


def test_ping_pong_carries_match_copied_carries_over_uneven_runs() -> None:
    """Carried state that pairs up costs no copies (swapped recordings alternate); runs of 2
    and 3 steps, reading outputs and downloading carried inputs between them, give the same
    bits as the copy path (forced here by also carrying an output into the step input)."""
    graph = mlp_adam_graph()
    batches = _batches(5)
    ex = open_executor(True)
    try:
        pong = _program(ex, graph, CARRY)
        assert pong.carry_mode == "ping-pong"
        # one more carry whose source no dispatch writes (an input output) makes it copy
        graph_c = copy.deepcopy(graph)
        graph_c["nodes"] += [_input(30, [1], np.ones(1)), _input(31, [1], np.ones(1) * 2)]
        graph_c["outputs"].append({"name": "c31", "id": 31})
        copied = _program(ex, graph_c, {**CARRY, 30: "c31"})
        assert copied.carry_mode == "copies"
        seen = []
        for program in (pong, copied):
            got = [program.run(batches[:2], [14, 26]), program.run(batches[2:], [14, 29])]
            got.append({i: program.download(i) for i in (2, 3, 4, 8, 26)})  # inputs, an output
            seen.append(got)
            program.dispose()
        for a, b in zip(*seen, strict=True):
            assert a.keys() == b.keys()
            assert all(_same_bits(a[k], b[k]) for k in a), sorted(a)
        assert _same_bits(seen[0][2][2], seen[0][2][26])  # w1 input == the last w1 output
        assert not _same_bits(seen[0][2][2], graph["nodes"][2]["data"])  # and it trained
    finally:
        ex.dispose()


def _log_session() -> object:
    graph = {
        "version": 2,
        "nodes": [{"id": 0, "op": "input", "shape": [2]}, {"id": 1, "op": "log", "a": 0}],
        "outputs": [{"name": "y", "id": 1}],
    }
    return host.prepare(graph, feeds=[0], backend="wgpu", allow_software=True)


def test_a_non_finite_read_back_poisons_a_wgpu_session() -> None:
    session = _log_session()
    try:
        assert session.run({0: [1.0, np.e]})["outputs"]["y"]["data"][0] == 0.0
        with pytest.raises(GpuLabError) as err:
            session.run({0: [-1.0, 1.0]})  # log(-1) = NaN
        assert err.value.code == "BACKEND" and "non-finite" in err.value.message
        with pytest.raises(GpuLabError) as err:
            session.run({0: [1.0, 1.0]})
        assert err.value.code == "STATE"
    finally:
        session.dispose()


def test_a_lost_device_fails_the_run_with_backend_then_state() -> None:
    ex = open_executor(True)
    try:
        checked = validate(
            {
                "version": 2,
                "nodes": [{"id": 0, "op": "input", "shape": [2]}, {"id": 1, "op": "log", "a": 0}],
                "outputs": [{"name": "y", "id": 1}],
            }
        )
        from gpulab.session import Session, SessionPlan

        plan = SessionPlan.build(checked, [0], {}, [], None, {})
        session = Session(ex.prepare(checked, feeds=[0]), ex.name, plan, {})
        session.run({0: [1.0, 2.0]})
        ex.lose_device()
        with pytest.raises(GpuLabError) as err:
            session.run({0: [1.0, 2.0]})
        assert err.value.code == "BACKEND" and "lost" in err.value.message
        with pytest.raises(GpuLabError) as err:
            session.run({0: [1.0, 2.0]})
        assert err.value.code == "STATE"
        session.dispose()  # always works
    finally:
        ex.dispose()
