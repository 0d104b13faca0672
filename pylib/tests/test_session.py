"""Prepared sessions on cpu-python: N session steps equal N chained runs bit for bit (a small
MLP with Adam), carry/resident/download, feed checks, STATE poisoning and DISPOSED."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gpulab import GpuLabError, Graph
from gpulab.session import Session

RNG = np.random.default_rng(42)
SIZES = {"w1": (4, 8), "b1": (8,), "w2": (8, 3), "b2": (3,)}
INITIAL = {k: (RNG.standard_normal(s) * 0.5).astype(np.float32) for k, s in SIZES.items()}
BATCHES = [
    (
        RNG.standard_normal((6, 4)).astype(np.float32),
        np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 6)],
    )
    for _ in range(5)
]


def mlp_adam_step(g: Graph, params: dict, moments: dict, step, x, y) -> dict:
    """One training step: forward, backward by hand, Adam on every parameter."""
    w1, b1, w2, b2 = (params[k] for k in ("w1", "b1", "w2", "b2"))
    z1 = x @ w1 + b1
    h = z1.relu()
    logits = h @ w2 + b2
    loss = logits.cross_entropy(y)
    dlogits = logits.cross_entropy_grad(y)
    dz1 = (dlogits @ w2.transpose()) * z1.positive()
    grads = {
        "w2": h.transpose() @ dlogits,
        "b2": dlogits.sum(axis=0),
        "w1": x.transpose() @ dz1,
        "b1": dz1.sum(axis=0),
    }
    new = {"loss": loss, "step": step + 1}
    for k in SIZES:
        m, v = moments[k]
        new[k], new["m_" + k], new["v_" + k] = g.adam(params[k], m, v, grads[k], step, lr=0.01)
    return new


def constants(g: Graph, state: dict) -> tuple[dict, dict, object]:
    params = {k: g.tensor(state[k]) for k in SIZES}
    moments = {k: (g.tensor(state["m_" + k]), g.tensor(state["v_" + k])) for k in SIZES}
    return params, moments, g.tensor(state["step"])


def initial_state() -> dict:
    state = {k: v.copy() for k, v in INITIAL.items()}
    for k, s in SIZES.items():
        state["m_" + k] = np.zeros(s, np.float32)
        state["v_" + k] = np.zeros(s, np.float32)
    state["step"] = np.array([1.0], np.float32)
    return state


def chained_runs(steps: int) -> tuple[dict, float]:
    state = initial_state()
    loss = math.nan
    for x_data, y_data in BATCHES[:steps]:
        g = Graph()
        params, moments, step = constants(g, state)
        new = mlp_adam_step(g, params, moments, step, g.tensor(x_data), g.tensor(y_data))
        result = g.run(backend="cpu-python", **new)
        state = {k: v["array"] for k, v in result["outputs"].items() if k != "loss"}
        loss = result["outputs"]["loss"]["data"][0]
    return state, loss


def prepared_session(resident: tuple = ()) -> tuple[Session, dict, object, object]:
    g = Graph()
    params, moments, step = constants(g, initial_state())
    x, y = g.input([6, 4], name="x"), g.input([6, 3], name="y")
    new = mlp_adam_step(g, params, moments, step, x, y)
    carry = {params[k]: new[k] for k in SIZES}
    carry.update({moments[k][0]: new["m_" + k] for k in SIZES})
    carry.update({moments[k][1]: new["v_" + k] for k in SIZES})
    carry[step] = new["step"]
    session = g.prepare(
        feeds=[x, y], carry=carry, backend="cpu-python", resident=resident, loss=new["loss"]
    )
    return session, params, x, y


def test_five_session_steps_equal_five_chained_runs_bit_for_bit():
    want_state, want_loss = chained_runs(5)
    session, params, x, y = prepared_session()
    for x_data, y_data in BATCHES[:5]:
        result = session.run({x: x_data, y: y_data})
    assert result["backend"] == "cpu-python" and result["stats"]["steps_run"] == 5
    assert result["outputs"]["loss"]["data"][0] == want_loss
    for k in SIZES:
        got = session.download(params[k])["array"]
        assert got.tobytes() == want_state[k].tobytes(), k
    session.dispose()


def test_run_steps_in_one_call_equals_single_steps():
    want_state, want_loss = chained_runs(5)
    session, params, _, _ = prepared_session()
    result = session.run_steps([{"x": xd, "y": yd} for xd, yd in BATCHES[:5]])  # names as keys
    assert result["stats"]["steps"] == 5
    assert result["outputs"]["loss"]["data"][0] == want_loss
    assert session.download(params["w1"])["array"].tobytes() == want_state["w1"].tobytes()
    session.dispose()


def test_the_session_learns():
    session, _, x, y = prepared_session()
    feeds = {x: BATCHES[0][0], y: BATCHES[0][1]}
    first = session.run(feeds)["outputs"]["loss"]["data"][0]
    last = session.run_steps([feeds] * 30)["outputs"]["loss"]["data"][0]
    assert last < 0.8 * first
    session.dispose()


def test_non_finite_read_back_poisons_the_session():
    session, params, x, y = prepared_session()
    bad = BATCHES[0][1].copy()
    bad[0, 0] = np.nan  # a NaN target makes the loss NaN
    with pytest.raises(GpuLabError) as info:
        session.run({x: BATCHES[0][0], y: bad})
    assert info.value.code == "BACKEND" and "non-finite" in info.value.message
    assert session.poisoned
    for call in (
        lambda: session.run({x: BATCHES[0][0], y: BATCHES[0][1]}),
        lambda: session.download(params["w1"]),
        lambda: session.run_steps(1),
    ):
        with pytest.raises(GpuLabError) as info:
            call()
        assert info.value.code == "STATE"
    session.dispose()
    session.dispose()  # idempotent
    for call in (
        lambda: session.run({x: BATCHES[0][0], y: BATCHES[0][1]}),
        lambda: session.download(params["w1"]),
    ):
        with pytest.raises(GpuLabError) as info:
            call()
        assert info.value.code == "DISPOSED"


def test_an_executor_failure_poisons_the_session():
    session, params, x, y = prepared_session()

    def broken_run(steps, read_ids):
        raise RuntimeError("device lost")

    session._program.run = broken_run
    with pytest.raises(GpuLabError) as info:
        session.run({x: BATCHES[0][0], y: BATCHES[0][1]})
    assert info.value.code == "BACKEND" and "device lost" in info.value.message
    with pytest.raises(GpuLabError) as info:
        session.download(params["b1"])
    assert info.value.code == "STATE"
    session.dispose()


def test_feed_errors_are_refused_before_work_and_do_not_poison():
    session, params, x, y = prepared_session()
    xd, yd = BATCHES[0]
    bad_calls = [
        lambda: session.run({x: xd}),  # y missing
        lambda: session.run({x: xd[:3], y: yd}),  # wrong length
        lambda: session.run({x: xd, y: yd, params["w1"]: xd}),  # not a fed input
        lambda: session.run({"nope": xd, y: yd}),  # unknown name
        lambda: session.run({x: [["a"] * 4] * 6, y: yd}),  # not numbers
        lambda: session.run_steps(2),  # a count needs no feeds
        lambda: session.run(2),  # the same through run
        lambda: session.run_steps([]),
        lambda: session.download("loss"),  # read back, not resident
    ]
    for call in bad_calls:
        with pytest.raises(GpuLabError) as info:
            call()
        assert info.value.code == "VALIDATION", info.value
    assert session.poisoned is None
    assert math.isfinite(session.run({x: xd, y: yd})["outputs"]["loss"]["data"][0])
    session.dispose()


def test_counter_session_with_step_count_resident_and_context_manager():
    g = Graph()
    count = g.tensor([0.0])
    nxt = count + 1
    double = nxt * 2
    with g.prepare(carry={count: nxt}, resident=[double], backend="cpu-python") as session:
        result = session.run_steps(3)
        assert result["outputs"] == {}
        assert session.download(count)["data"] == [3.0]
        assert session.download(double)["data"] == [6.0]
        session.run()
        assert session.download(count)["data"] == [4.0]
        session.run(10)  # a step count, as run_steps(10) (it raised AttributeError: 'int')
        assert session.download(count)["data"] == [14.0] and session.steps_run == 14
    assert session.disposed


def test_prepare_refuses_bad_session_plans():
    g = Graph()
    w = g.tensor([1.0, 2.0])
    fed = g.input([2])
    out = (w * fed).sum()
    cases = [
        lambda: g.prepare(out=out, backend="cpu-python"),  # fed not listed
        lambda: g.prepare(feeds=[w, fed], out=out, backend="cpu-python"),  # w has data
        lambda: g.prepare(feeds=[fed], carry={fed: w * 2}, out=out, backend="cpu-python"),
        lambda: g.prepare(feeds=[fed], carry={w: out}, out=out, backend="cpu-python"),  # shape
        lambda: g.prepare(feeds=[fed], resident=["nope"], out=out, backend="cpu-python"),
    ]
    for case in cases:
        with pytest.raises(GpuLabError) as info:
            case()
        assert info.value.code == "VALIDATION", info.value
