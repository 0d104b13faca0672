"""planner-epilogue.mjs's folded matmuls (docs/plan.md "Fusion") on the browser WebGPU backend
in headless Chromium (SwiftShader: software, so `minMatmulWorkgroups` 1 and the shapes pick the
kernels): the fused plan gives the words of the unfused one (planner-epilogue.mjs's
EPILOGUE_MAP2 emptied), every NaN counted as one (e2e/epilogue_graphs.words), with every
epilogue slot on special values and on random data (matmul_small: SwiftShader takes ~40 s to
build and run the 128 tile, so the bigger kernels' fused plans run in the browser through the
corpus case chain/matmul_epilogues, judged against the reference). wgpu-py's side, every
kernel: pylib/tests/test_matmul_epilogue.py."""

from __future__ import annotations

from e2e.epilogue_graphs import FUSED, epilogue_graph, words
from e2e.test_plans_equal import _jsonable

RUN = """
const { EPILOGUE_MAP2 } = await import('/backends-js/src/planner-epilogue.mjs');
const saved = { ...EPILOGUE_MAP2 };
const out = [];
for (const arm of ['fused', 'plain']) {
  if (arm === 'plain') for (const k of Object.keys(EPILOGUE_MAP2)) delete EPILOGUE_MAP2[k];
  const got = {kernels: [], results: []};
  const hooks = {transformPlan: (plan) => {
    got.kernels.push(...plan.steps.filter((s) => 'EPI_OP' in s.overrides).map((s) => s.kernel));
    return plan;
  }};
  const rt = await wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true, hooks});
  try {
    for (const graph of arg) {
      const res = await rt.execute(graph);
      got.results.push(Object.fromEntries(Object.entries(res.outputs).map(
        ([k, t]) => [k, Array.from(new Float32Array(t.data))])));
    }
  } finally {
    rt.dispose();
    Object.assign(EPILOGUE_MAP2, saved);
  }
  out.push(got);
}
return out;
"""


def test_folded_matmuls_give_the_unfused_words_on_webgpu(wg):
    graphs = [_jsonable(epilogue_graph(True)), _jsonable(epilogue_graph(False))]
    fused, plain = wg(RUN, graphs)
    assert fused["kernels"] == ["matmul_small"] * 2 * len(FUSED)  # every folded node
    assert plain["kernels"] == []
    for f, p in zip(fused["results"], plain["results"], strict=True):
        differ = [name for name in f if words(f[name]) != words(p[name])]
        assert not differ, differ
