"""The wgpu program's host-side run switches (program.py ENCODE, WAIT, MAP_MODE, PRE_ENCODE:
executor hooks that bench/gpu_timestamps.py measures A/B) change how a step is encoded and
waited for, never what it computes: the MLP training step gives the same bits in every arm,
1 step and 3 steps per run (ping-pong carries across the steps)."""

from __future__ import annotations

import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.models.mlp import init, step_graph
from gpulab.native.program import PRE_ENCODE
from gpulab.native.wgpu_executor import open_executor
from gpulab.protocol import validate

pytestmark = pytest.mark.slow  # every run switch of the wgpu executor, on lavapipe

ARMS = [
    {"encode": "wgpu-py"},  # the default is "raw" (program.ENCODE)
    {"map_mode": "READ"},  # the default is "READ_NOSYNC" (program.MAP_MODE)
    {"wait": "thread", "pre_encode": False},  # the defaults before (program.WAIT, PRE_ENCODE)
    {"wait": "direct", "pre_encode": False},
    {"wait": "direct", "pre_encode": True},
    {"encode": "raw"},
    {"pre_encode": True, "encode": "wgpu-py", "wait": "thread"},
]
# steps per run; "download" reads a carried value between runs (the pre-encoded step is dropped)
RUNS: list[int | str] = [1, 1, 1, "download", 1, 3, 1, 1]
STEPS = sum(r for r in RUNS if isinstance(r, int))


def _losses_and_weights(hooks: dict) -> tuple[list[np.ndarray], int]:
    executor = open_executor(True, hooks={"steps_per_submit": 1, **hooks})
    try:
        values = init(0)
        fed = step_graph(values, feed_batch=True)
        outputs = fed.outputs()
        checked = validate(fed.graph.to_dict(**outputs))
        carry = {k.id: v.id for k, v in fed.carry().items()}
        program = executor.prepare(
            checked, feeds=[fed.x.id, fed.y.id], carry=carry, keep=[t.id for t in outputs.values()]
        )
        batch = {fed.x.id: values["x"], fed.y.id: values["y"]}
        got = []
        for run in RUNS:
            if run == "download":
                got.append(program.download(min(carry)))
            else:
                got.append(program.run([batch] * int(run), [fed.loss.id])[fed.loss.id])
        got += [program.download(k) for k in sorted(carry)]
        program.dispose()
        if hooks.get("pre_encode", PRE_ENCODE):  # used by the 1-step runs after a 1-step run
            assert executor.counters["pre_encoded"] == 3
        return got, executor.counters["submits"]
    finally:
        executor.dispose()


@pytest.fixture(scope="module")
def default() -> tuple[list[np.ndarray], int]:
    return _losses_and_weights({})


@pytest.mark.parametrize("hooks", ARMS, ids=lambda h: ",".join(f"{k}={v}" for k, v in h.items()))
def test_every_switch_gives_the_default_bits(
    default: tuple[list[np.ndarray], int], hooks: dict
) -> None:
    (got, submits), (want, default_submits) = _losses_and_weights(hooks), default
    assert len(got) == len(want) > 2
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()
    assert submits == default_submits  # a submission per step in every arm
    assert len({float(loss) for loss in got[:3]}) == 3  # the state moved between the runs


@pytest.mark.parametrize("encode", ["raw", "wgpu-py"])
def test_an_invalid_dispatch_is_backend_on_either_encoding(encode: str) -> None:
    """The raw C calls skip wgpu-py's per-call error capture; wgpu records the error in the
    pass and reports it at encoder.finish(), so a run still fails with BACKEND naming it."""
    graph = {
        "version": 1,
        "nodes": [
            {"id": 0, "op": "input", "shape": [4], "data": [1, -2, 3, -4]},
            {"id": 1, "op": "relu", "a": 0},
        ],
        "outputs": [{"name": "y", "id": 1}],
    }
    # pre_encode off: the next run must encode the dispatch this test breaks below
    executor = open_executor(True, hooks={"encode": encode, "pre_encode": False})
    try:
        program = executor.prepare(validate(graph), keep=[1])
        assert program.run([{}], [1])[1].tolist() == [1, 0, 3, 0]
        pipeline, group, _ = program._recorded[0][0]
        too_many = 1 << 20  # workgroups past maxComputeWorkgroupsPerDimension
        program._recorded[0][0] = (pipeline, group, [too_many, 1, 1])
        program._raw[0][0] = (pipeline._internal, group._internal, too_many, 1, 1)
        with pytest.raises(GpuLabError) as info:
            program.run([{}], [1])
        assert info.value.code == "BACKEND" and "dispatch" in str(info.value)
    finally:
        executor.dispose()


def test_one_shot_programs_do_not_pre_encode() -> None:
    """execute's programs run once: encoding a next step for them would be wasted work."""
    executor = open_executor(True, hooks={"pre_encode": True})
    try:
        step = step_graph(init(0))
        checked = validate(step.graph.to_dict(**step.outputs()))
        for _ in range(3):
            program = executor.prepare(checked)
            program.run([{}], [checked.outputs[0].id])
            assert program._pre is None
            program.dispose()
        assert "pre_encoded" not in executor.counters
    finally:
        executor.dispose()
