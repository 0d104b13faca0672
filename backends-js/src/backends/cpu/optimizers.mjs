// Optimizer updates. Each formula is evaluated in float64 from the float32 operands and the
// float64 attributes, and rounded once to float32 on store: within the `optimizer` class,
// and deterministic, so a session step and an execute give the same bits.
import { registerKernel } from './registry.mjs';

registerKernel('sgd_update', (out, [p, g], node) => {
  const { lr } = node.attrs;
  for (let i = 0; i < out.length; i++) out[i] = p[i] - lr * g[i];
});

registerKernel('momentum_update', (out, [v, g], node) => {
  const { momentum } = node.attrs;
  for (let i = 0; i < out.length; i++) out[i] = momentum * v[i] + g[i];
});

registerKernel('adam_m', (out, [m, g], node) => {
  const { beta1 } = node.attrs;
  for (let i = 0; i < out.length; i++) out[i] = beta1 * m[i] + (1 - beta1) * g[i];
});

registerKernel('adam_v', (out, [v, g], node) => {
  const { beta2 } = node.attrs;
  for (let i = 0; i < out.length; i++) out[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
});

registerKernel('adam_update', (out, [p, m, v, t], node) => {
  const { lr, beta1, beta2, eps } = node.attrs;
  const step = t[0];
  const stepSize = lr / (1 - beta1 ** step);
  const vScale = Math.sqrt(1 - beta2 ** step);
  for (let i = 0; i < out.length; i++) {
    out[i] = p[i] - (stepSize * m[i]) / (Math.sqrt(v[i]) / vScale + eps);
  }
});
