"""The browser WebGPU backend's run paths: carries that ping-pong between two
recordings of the bind groups instead of being copied, and a submission per step (the default
on hardware adapters; software ones keep one per run) give the same bits as the copy path in
one submission, for every read-back, download and later run. Headless Chromium, SwiftShader
(software): the paths are chosen with the backend's hooks stepsPerSubmit / carryCopies."""

from __future__ import annotations

ARMS = {
    "default": "{}",
    "old": "{stepsPerSubmit: 0, carryCopies: true}",
    "submit per step": "{stepsPerSubmit: 1}",
    "submit per step, copies": "{stepsPerSubmit: 1, carryCopies: true}",
    "every 3 steps": "{stepsPerSubmit: 3}",
    "every 2 steps, feed pairs": "{stepsPerSubmit: 2, feedPairs: true}",
    "one submit, feed pairs": "{stepsPerSubmit: 0, feedPairs: true}",
    "feed pairs, copies": "{stepsPerSubmit: 2, feedPairs: true, carryCopies: true}",
}

RUN_ARM = """
const hooks = {};
const rt = await wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true, hooks});
Object.assign(hooks, ARM);
const names = ['W1', 'W2', 'm1', 'v1', 'm2', 'v2', 't'];
const s = await rt.prepare(wg.mlpGraph(wg.mlpInitialState()), {feeds: [0, 1],
  carry: wg.MLP_CARRY, resident: names, outputs: ['loss']});
const submits = () => hooks.webgpuStats().submits;
const before = Array.from(await s.download(4));  // a carried input before any run
const s0 = submits();
const r8 = await s.run(Array.from({length: 8}, (_, k) => wg.mlpFeeds(k)));
const eight = submits() - s0;
const after8 = {};
for (const n of names) after8[n] = wg.bits(await s.download(n));
const carriedW1 = wg.bits(await s.download(2));  // the carried input: W1's value
const r1 = await s.run([wg.mlpFeeds(8)]);
const r3 = await s.run([wg.mlpFeeds(9), wg.mlpFeeds(10), wg.mlpFeeds(11)]);
const last = {};
for (const n of names) last[n] = wg.bits(await s.download(n));
const pingpong = s.parts.program.carriesSwap;
s.dispose(); rt.dispose();
return {before, eight, pingpong, loss8: wg.bits(r8.outputs.loss.data), after8, carriedW1,
  loss1: wg.bits(r1.outputs.loss.data), loss3: wg.bits(r3.outputs.loss.data), last,
  software: r8.stats.software};
"""


def test_run_paths_give_the_same_bits(wg):
    got = {name: wg(RUN_ARM.replace("ARM", arm)) for name, arm in ARMS.items()}
    # the paths really differ: ping-pong where asked, submissions as asked
    assert got["default"]["software"] is True
    assert {n: (r["pingpong"], r["eight"]) for n, r in got.items()} == {
        "default": (True, 1),  # software: one submission per run
        "old": (False, 1),
        "submit per step": (True, 8),
        "submit per step, copies": (False, 8),
        "every 3 steps": (True, 3),
        "every 2 steps, feed pairs": (True, 4),
        "one submit, feed pairs": (True, 1),
        "feed pairs, copies": (False, 4),
    }
    want = got["old"]
    assert want["before"] == [0.0] * len(want["before"])  # m1 starts at zero
    assert want["after8"]["W1"] == want["carriedW1"]
    assert want["loss1"] != want["loss8"]  # the state moved on
    keys = ("before", "loss8", "after8", "carriedW1", "loss1", "loss3", "last")
    for name, r in got.items():
        assert {k: r[k] for k in keys} == {k: want[k] for k in keys}, name


CARRIED_OUTPUT = """
const hooks = ARM;
const rt = await wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true, hooks});
const g = {version: 1, nodes: [
  {id: 0, op: 'input', shape: [2], data: [1, 2]},
  {id: 1, op: 'full', shape: [2], value: 1},
  {id: 2, op: 'add', a: 0, b: 1}],
  outputs: [{name: 'w', id: 0}, {name: 'wn', id: 2}]};
const s = await rt.prepare(g, {carry: {0: 'wn'}, outputs: ['w', 'wn']});
const runs = [];
for (const n of [1, 1, 3]) {
  const r = await s.run(n);
  runs.push([Array.from(r.outputs.w.data), Array.from(r.outputs.wn.data)]);
}
const now = Array.from(await s.download(0));
const pingpong = s.parts.program.swap.size > 0;
s.dispose(); rt.dispose();
return {runs, now, pingpong};
"""


def test_an_output_that_is_a_carried_input_reads_the_value_its_step_used(wg):
    """docs/protocol.md: an output that is a carried input keeps the value the last step used
    (the cpu backends' answer), on the ping-pong path too; download gives the carried value."""
    want = {"runs": [[[1, 2], [2, 3]], [[2, 3], [3, 4]], [[5, 6], [6, 7]]], "now": [6, 7]}
    for arm, pingpong in (("{}", True), ("{carryCopies: true}", False)):
        got = wg(CARRIED_OUTPUT.replace("ARM", arm))
        assert got.pop("pingpong") is pingpong
        assert got == want, arm
