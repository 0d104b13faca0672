// Worker side of the WebGL2 tests: the harness scenarios run here on an OffscreenCanvas.
import * as harness from './webgl2_harness.mjs';

self.onmessage = async ({ data: { id, name, args } }) => {
  try {
    const result = await harness[name](args);
    self.postMessage({ id, result: { ...result, scope: self.constructor.name } });
  } catch (err) {
    self.postMessage({ id, error: { code: err?.code ?? null, message: String(err?.message ?? err) } });
  }
};
