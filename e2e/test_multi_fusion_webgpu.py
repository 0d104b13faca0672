"""planner-multi.mjs's dispatches (multi-tensor Adam, the cross-entropy pair; docs/plan.md
"Fusion") on the browser WebGPU backend in headless Chromium (SwiftShader: software): the fused
plan gives the bits of the unfused one (planner-multi.mjs's MULTI_FUSIONS emptied), and takes
as many Adam parameters a dispatch as the adapter's storage-buffer limit allows. Chromium
reports 10 for SwiftShader (its limit tiers), one parameter: here the pair runs, the
multi-tensor Adam only where a device allows 15 or more (wgpu-py on lavapipe, 32: its tests
are pylib/tests/test_multi_fusion.py; node + Dawn on the H200:
bench/archive/fusestep_h200.sh)."""

from __future__ import annotations

import numpy as np

from e2e.multi_graphs import multi_graph, params_graph

RUN = """
const { MULTI_FUSIONS } = await import('/backends-js/src/planner-multi.mjs');
const all = [...MULTI_FUSIONS];
const out = [];
for (const limits of [{}, {maxStorageBuffersPerShaderStage: 8}]) {
  if (out.length) MULTI_FUSIONS.clear();  // the second arm: planner-multi.mjs off
  const arm = {kernels: [], results: []};
  const hooks = {limits, transformPlan: (plan) => {
    arm.limits = plan.limits;
    arm.kernels.push(...plan.steps.map((s) => s.kernel));
    return plan;
  }};
  const rt = await wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true, hooks});
  for (const graph of arg) {
    const res = await rt.execute(graph);
    arm.results.push(Object.fromEntries(Object.entries(res.outputs).map(
      ([k, t]) => [k, Array.from(new Uint32Array(new Float32Array(t.data).buffer))])));
  }
  rt.dispose();
  out.push(arm);
}
all.forEach((f) => MULTI_FUSIONS.add(f));
return out;
"""


def test_multi_dispatches_give_the_unfused_bits_on_webgpu(wg):
    graphs = [params_graph(4), params_graph(2), multi_graph(np.random.default_rng(3))]
    fused, plain = wg(RUN, graphs)
    storage = fused["limits"]["maxStorageBuffersPerShaderStage"]
    slots = min(8, (storage - 1) // 7)
    assert plain["limits"]["maxStorageBuffersPerShaderStage"] == 8
    assert "cross_entropy_pair" in fused["kernels"]  # any limits
    if slots >= 2:
        assert any(k.startswith("adam_multi") for k in fused["kernels"]), fused["kernels"]
    assert not any(k.startswith("adam_multi") for k in plain["kernels"])
    assert "cross_entropy_pair" not in plain["kernels"]
    assert fused["results"] == plain["results"]
    print(f"SwiftShader: maxStorageBuffersPerShaderStage {storage}, {slots} Adam parameters")


def test_every_adam_multi_kernel_compiles_through_tint(wg):
    """SwiftShader's 10 storage buffers refuse the pipelines, but the modules still compile:
    Chromium's WGSL compiler (Tint) accepts every adam_multiK and cross_entropy_pair, so a
    browser on a device with the limit runs them (naga accepts them in the wgpu tests)."""
    errors = wg(
        """
        const adapter = await navigator.gpu.requestAdapter();
        const device = await adapter.requestDevice();
        const out = {};
        for (const name of arg) {
          const code = await (await fetch(`/kernels/wgsl/${name}.wgsl`)).text();
          const info = await device.createShaderModule({code}).getCompilationInfo();
          out[name] = info.messages.filter((m) => m.type === 'error').map((m) => m.message);
        }
        device.destroy();
        return out;
        """,
        [*(f"adam_multi{k}" for k in range(2, 9)), "cross_entropy_pair"],
    )
    assert errors == {name: [] for name in errors} and len(errors) == 8
