// Adam's update. Each optimizer formula is evaluated in float64 from the float32 operands and the
// float64 attributes, and rounded once to float32 on store: within the `optimizer` class,
// and deterministic, so a session step and an execute give the same bits.
import { registerKernel } from './registry.mjs';

// sgd_update, momentum_update, adam_m and adam_v are map2 ops: maps.mjs (from kernels/ops.json).

registerKernel('adam_update', (out, [p, m, v, t], node) => {
  const { lr, beta1, beta2, eps } = node.attrs;
  const step = t[0];
  const stepSize = lr / (1 - beta1 ** step);
  const vScale = Math.sqrt(1 - beta2 ** step);
  for (let i = 0; i < out.length; i++) {
    out[i] = p[i] - (stepSize * m[i]) / (Math.sqrt(v[i]) / vScale + eps);
  }
});
