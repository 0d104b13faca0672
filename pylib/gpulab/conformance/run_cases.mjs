// Runs conformance cases on one runtime backend and encodes every output losslessly.
// Shared by node_executor.mjs (node lanes) and page.mjs (browser lanes), so both lanes report
// the same way: {lane: {available, reason, backend, adapter, software, extra},
//                results: [{name, outputs: {name: {shape, dtype, b64}}} | {name, error: {code, message, node}}]}
// Output bytes travel as base64 (little-endian) because JSON cannot carry NaN or infinities,
// and in their dtype (an int32 argmax stays exact). A refusal (UNSUPPORTED on a lane that
// lanes.json lists) is a result like any other: the Python judge decides what was expected.

/** @param {ArrayBufferView} typed @returns {string} */
export function toBase64(typed) {
  const bytes = new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, Array.from(bytes.subarray(i, i + 0x8000)));
  }
  return btoa(text);
}

const ARRAYS = { float32: Float32Array, int32: Int32Array, uint32: Uint32Array, bool: Uint8Array };

/** An output's data as the typed array of its dtype (a plain array is converted). */
function typedOf(/** @type {any} */ data, /** @type {string} */ dtype) {
  const Type = ARRAYS[/** @type {keyof typeof ARRAYS} */ (dtype)];
  if (!Type) throw Object.assign(new Error(`output of unknown dtype ${dtype}`), { code: 'BACKEND' });
  return data instanceof Type ? data : Type.from(data);
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
 * The broken-kernel test hook: a copy of the data with the lowest bit of every element flipped.
 * @param {ArrayBufferView} typed @returns {Uint8Array}
 */
function flipLowBits(typed) {
  const bytes = new Uint8Array(typed.buffer.slice(typed.byteOffset, typed.byteOffset + typed.byteLength));
  const size = /** @type {any} */ (typed).BYTES_PER_ELEMENT ?? 1;
  for (let i = 0; i < bytes.length; i += size) bytes[i] ^= 1;  // little-endian: the low byte
  return bytes;
}

/** Output names whose node's op is in `ops` (the ops the break hook corrupts). */
function brokenOutputs(/** @type {any} */ graph, /** @type {string[]} */ ops) {
  if (!ops.length || !Array.isArray(graph?.nodes) || !Array.isArray(graph?.outputs)) return new Set();
  const opOf = new Map(graph.nodes.map((/** @type {any} */ n) => [n.id, n.op]));
  return new Set(graph.outputs.filter((/** @type {any} */ o) => ops.includes(opOf.get(o.id)))
    .map((/** @type {any} */ o) => o.name));
}

/**
 * @param {(opts: object) => Promise<any>} createRuntime
 * @param {{backend: string, allowSoftware: boolean, caseTimeoutMs?: number,
 *   withoutKernels?: string[], breakOps?: string[]}} opts  withoutKernels: a test hook, ops the
 *   backend answers as having no kernel for (the runtime's hooks.withoutKernels); breakOps:
 *   another, ops whose outputs come back with the lowest bit of every element flipped
 * @param {{name: string, graph: object}[]} cases
 */
export async function runCases(createRuntime, { backend, allowSoftware, caseTimeoutMs = 60000,
  withoutKernels = [], breakOps = [] }, cases) {
  let runtime;
  try {
    runtime = await createRuntime({ backend, allowSoftware,
      hooks: withoutKernels.length ? { withoutKernels } : {} });
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
        /** @type {Record<string, {shape: number[], dtype: string, b64: string}>} */
        const outputs = {};
        const broken = brokenOutputs(graph, breakOps);
        for (const [outName, out] of Object.entries(res.outputs)) {
          const dtype = out.dtype ?? 'float32';
          const typed = typedOf(out.data, dtype);
          const data = broken.has(outName) ? flipLowBits(typed) : typed;
          outputs[outName] = { shape: Array.from(out.shape), dtype, b64: toBase64(data) };
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
