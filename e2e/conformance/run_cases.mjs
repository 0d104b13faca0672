// Runs conformance cases on one runtime backend and encodes every output losslessly.
// Shared by node_executor.mjs (node lanes) and page.mjs (browser lanes), so both lanes report
// the same way: {lane: {available, reason, backend, adapter, software, extra},
//                results: [{name, outputs: {name: {shape, b64}}} | {name, error: {code, message, node}}]}
// Float32 bits travel as base64 (little-endian) because JSON cannot carry NaN or infinities.

/** @param {Float32Array} f32 @returns {string} */
export function toBase64(f32) {
  const bytes = new Uint8Array(f32.buffer, f32.byteOffset, f32.byteLength);
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, Array.from(bytes.subarray(i, i + 0x8000)));
  }
  return btoa(text);
}

/** @param {unknown} err */
function errorOf(err) {
  const e = /** @type {{code?: string, message?: string, node?: number|null, name?: string}} */ (err);
  const code = typeof e?.code === 'string' ? e.code : `CRASH (${e?.name ?? typeof err})`;
  return { code, message: String(e?.message ?? err), node: e?.node ?? null };
}

/** @param {unknown} value */
function plain(value) {
  try {
    return JSON.parse(JSON.stringify(value ?? null));
  } catch {
    return String(value);
  }
}

/**
 * Where the runtime ran, from whatever it exposes (runtime.info, result.stats).
 * @param {any} runtime @param {any} stats
 */
function laneInfo(runtime, stats) {
  const info = runtime.info ?? stats?.info ?? {};
  const described = (/** @type {any} */ a) => (a && typeof a === 'object'
    ? [a.vendor, a.architecture, a.description].filter(Boolean).join(' / ') || null : a ?? null);
  const adapter = described(info) ?? described(stats?.adapter);
  const software = info.software ?? stats?.software ?? stats?.adapter?.software ?? null;
  return {
    available: true,
    reason: '',
    backend: runtime.backend ?? stats?.backend ?? null,
    adapter: adapter == null ? null : String(adapter),
    software: typeof software === 'boolean' ? software : null,
    extra: { info: plain(info), attempts: plain(runtime.attempts ?? stats?.attempts ?? null),
             stats: plain(stats) },
  };
}

/** @param {Promise<unknown>} promise @param {number} ms @param {string} what */
function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${what} timed out after ${ms} ms`),
      { code: 'TIMEOUT' })), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * @param {(opts: object) => Promise<any>} createRuntime
 * @param {{backend: string, allowSoftware: boolean, caseTimeoutMs?: number}} opts
 * @param {{name: string, graph: object}[]} cases
 */
export async function runCases(createRuntime, { backend, allowSoftware, caseTimeoutMs = 60000 }, cases) {
  let runtime;
  try {
    runtime = await createRuntime({ backend, allowSoftware });
  } catch (err) {
    const e = errorOf(err);
    return { lane: { available: false, reason: `${e.code}: ${e.message}` }, results: [] };
  }
  const results = [];
  let lane = null;
  try {
    for (const { name, graph } of cases) {
      try {
        const res = await withTimeout(runtime.execute(graph), caseTimeoutMs, name);
        lane ??= laneInfo(runtime, res.stats);
        if ((res.backend ?? runtime.backend) !== backend) {  // a lane counts only its backend
          throw Object.assign(new Error(`ran on ${res.backend ?? runtime.backend}, lane is ${backend}`),
            { code: 'FALLBACK' });
        }
        /** @type {Record<string, {shape: number[], b64: string}>} */
        const outputs = {};
        for (const [outName, out] of Object.entries(res.outputs)) {
          const data = out.data instanceof Float32Array ? out.data : Float32Array.from(out.data);
          outputs[outName] = { shape: Array.from(out.shape), b64: toBase64(data) };
        }
        results.push({ name, outputs });
      } catch (err) {
        results.push({ name, error: errorOf(err) });
      }
    }
  } finally {
    await runtime.dispose?.();
  }
  return { lane: lane ?? laneInfo(runtime, null), results };
}
