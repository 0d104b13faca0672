"""Hostile input, the native Python half: defects 4, 8, 9, 10 and 16, each test named by its
defect's number in the adversarial review's ranked list (`issues show 11`, "Defects (ranked)";
the server's: test_hostile_server.py; the JS twin: backends-js/test/hostile.test.mjs)."""

from __future__ import annotations

from typing import Any

import pytest
from gpulab import GpuLabError, Graph, optable


def refused(code: str, call: Any, *args: Any, **kwargs: Any) -> GpuLabError:
    with pytest.raises(GpuLabError) as info:
        call(*args, **kwargs)
    assert info.value.code == code, info.value
    return info.value


def test_defect4_output_named_proto_is_refused_natively_as_in_the_page() -> None:
    g = Graph()
    t = g.tensor([1.0, 2.0])
    err = refused("VALIDATION", g.run, backend="cpu-python", __proto__=t)
    assert "reserved" in err.message
    refused("VALIDATION", g.prepare, backend="cpu-python", __proto__=t)
    # names that are only methods of JS objects stay ordinary outputs
    result = g.run(backend="cpu-python", constructor=t, toString=t * 2)
    assert result["outputs"]["toString"]["data"] == [2.0, 4.0]


def test_defect8_session_refuses_tensors_of_another_graph() -> None:
    g, other = Graph(), Graph()
    x = g.input([2])
    stranger = other.input([2])  # the same id (0) in another graph
    assert stranger.id == x.id
    s = g.prepare(feeds=[x], backend="cpu-python", y=x * 2)
    err = refused("VALIDATION", s.run, {stranger: [1.0, 2.0]})
    assert "another graph" in err.message
    assert s.poisoned is None
    assert s.run({x: [1.0, 2.0]})["outputs"]["y"]["data"] == [2.0, 4.0]
    acc = g.tensor([0.0, 0.0])
    s2 = g.prepare(carry={acc: "next"}, backend="cpu-python", next=acc + 1)
    s2.run(1)
    refused("VALIDATION", s2.download, other.tensor([0.0, 0.0]))
    assert s2.download(acc)["data"] == [1.0, 1.0]


def test_defect9_user_outputs_named_like_hidden_ones_are_kept() -> None:
    g = Graph()
    acc = g.tensor([0.0])
    nxt = acc + 1
    other = g.tensor([5.0])
    # the hidden output of carry target `nxt` would be named _carry<id>: the user's own
    # output of that name is another tensor and must survive
    name = f"_carry{nxt.id}"
    s = g.prepare(carry={acc: nxt}, backend="cpu-python", **{name: other})
    out = s.run(2)["outputs"]
    assert out[name]["data"] == [5.0]
    assert s.download(acc)["data"] == [2.0]
    res = g.prepare(resident=[nxt], backend="cpu-python", **{f"_resident{nxt.id}": other})
    assert res.run(1)["outputs"][f"_resident{nxt.id}"]["data"] == [5.0]


def test_defect10_absurd_step_counts_are_limit_with_the_documented_limit() -> None:
    limit = optable.limits()["max_steps"]
    assert limit == 1_000_000
    g = Graph()
    acc = g.tensor([0.0])
    s = g.prepare(carry={acc: "next"}, backend="cpu-python", next=acc + 1)
    for steps in (10**8, limit + 1, 10**30):
        err = refused("LIMIT", s.run_steps, steps)
        assert str(limit) in err.message and "max_steps" in err.message
    assert s.poisoned is None
    assert s.run_steps(3)["stats"]["steps"] == 3


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_defect10_step_lists_are_bounded_too() -> None:
    g = Graph()
    x = g.input([1])
    s = g.prepare(feeds=[x], backend="cpu-python", y=x + 1)
    limit = optable.limits()["max_steps"]

    def endless() -> Any:
        while True:
            yield {x: [1.0]}

    refused("LIMIT", s.run_steps, endless())  # an endless iterator ends at the limit
    assert s.run_steps({x: [float(i)]} for i in range(3))["outputs"]["y"]["data"] == [3.0]
    assert limit > 3


@pytest.mark.parametrize("steps", [2.5, "3", None, True, object(), [3], {"a": 1}])
def test_defect16_misused_run_steps_is_validation(steps: Any) -> None:
    g = Graph()
    acc = g.tensor([0.0])
    s = g.prepare(carry={acc: "next"}, backend="cpu-python", next=acc + 1)
    refused("VALIDATION", s.run_steps, steps)
    assert s.poisoned is None


@pytest.mark.parametrize("shape", [5, "3", None, 2.5, [2.5], [True]])
def test_defect16_misused_graph_input_is_validation(shape: Any) -> None:
    refused("VALIDATION", Graph().input, shape)


def test_defect5_runs_past_the_staging_buffer_are_split_not_poisoned() -> None:
    """All steps' feeds of a wgpu run share one staging buffer: 17 x 128 MiB feeds broke the
    session. The session splits the run where the program says its buffer is full."""
    import numpy as np
    from gpulab.session import Session

    g = Graph()
    x = g.input([4])
    acc = g.tensor([0.0] * 4)
    s = g.prepare(feeds=[x], carry={acc: "next"}, backend="cpu-python", next=acc + x)
    assert isinstance(s, Session)
    program = s._program
    runs: list[int] = []
    real_run = program.run

    def run(steps: Any, read: Any) -> Any:
        runs.append(len(steps))
        return real_run(steps, read)

    program.run = run
    program.max_steps_per_run = lambda: 3  # as a wgpu program whose buffer holds 3 steps' feeds
    steps = [{x: [float(i)] * 4} for i in range(10)]
    out = s.run_steps(steps)
    assert runs == [3, 3, 3, 1]
    assert out["outputs"]["next"]["data"] == [45.0] * 4 and s.poisoned is None
    assert np.array_equal(s.download(acc)["array"], np.full(4, 45.0, np.float32))
    runs.clear()
    s.run_steps(steps[:3])
    assert runs == [3]


def test_defect5_wgpu_program_says_how_many_steps_fit() -> None:
    from gpulab import executors

    try:
        executors.open_executor("wgpu", True)
    except GpuLabError as err:
        pytest.skip(f"no wgpu adapter here: {err.message}")  # counted as skipped, not passed
    executors.configure(allow_software=True)
    try:
        g = Graph()
        x = g.input([1024])  # 4 KiB per step
        s = g.prepare(feeds=[x], backend="wgpu", y=x + 1)
    finally:
        executors.configure()
    program = s._program
    limit = int(program._ex.device.limits["max-buffer-size"])
    assert program.max_steps_per_run() == limit // 4096
    program._ex.hooks["max_buffer_size"] = 3 * 4096
    try:
        assert program.max_steps_per_run() == 3
        out = s.run_steps([{x: [float(i)] * 1024} for i in range(8)])  # 3 runs
        assert out["outputs"]["y"]["data"][:2] == [8.0, 8.0] and s.poisoned is None
    finally:
        program._ex.hooks.pop("max_buffer_size", None)
