// "Compare with native": the cell's last graph runs on the server (POST /api/execute: wgpu-py
// on a hardware GPU, else cpu-python) and the two results are compared in float32 ulps, and
// judged with the conformance runner's rule (backends-js/src/tolerance.mjs, the twin of
// pylib/gpulab/conformance/compare.py), the native result standing in for the reference.
import { judge } from '../backends-js/src/tolerance.mjs';
import opTable from '../backends-js/src/ops.json' with { type: 'json' };

const f32 = new Float32Array(1);
const i32 = new Int32Array(f32.buffer);

/** Float32 bits mapped to integers whose order is the floats' order (so distance = ulps). */
function orderedBits(x) {
  f32[0] = x;
  const bits = i32[0];
  return bits < 0 ? -2147483648 - bits : bits;
}

/**
 * Distance between two float32 values in units in the last place: 0 when bit-identical (and
 * for +0/-0 and NaN/NaN), Infinity when exactly one is NaN.
 * @param {number} a @param {number} b
 */
export function ulpDistance(a, b) {
  const na = Number.isNaN(a);
  const nb = Number.isNaN(b);
  if (na || nb) return na && nb ? 0 : Infinity;
  return Math.abs(orderedBits(a) - orderedBits(b));
}

/** The protocol's JSON non-finite strings back to numbers. */
export function toNumber(v) {
  if (v === 'nan') return NaN;
  if (v === 'inf') return Infinity;
  if (v === '-inf') return -Infinity;
  return Number(v);
}

/** The tolerance class of output `name`: its producing op's class in the op table. */
export function toleranceOf(graph, name) {
  const out = graph?.outputs?.find((o) => o.name === name);
  const node = graph?.nodes?.find((n) => n.id === out?.id);
  const tolerance = node && opTable.ops[node.op]?.tolerance;
  return tolerance ? { op: node.op, tolerance, cls: opTable.tolerance_classes[tolerance] } : null;
}

/**
 * The verdict on one output: the runner's judge with the native result as the reference. The
 * page does not know the reference's per-element scale (reductions, matmul: the size of the
 * summed terms), so the scale term is 0 here: a stricter bound than the runner's for those.
 */
function judgeRow(row, bd, nd, graph, dtype) {
  const tol = toleranceOf(graph, row.name);
  if (!tol) return row;
  const verdict = judge(bd, nd, 0, tol.tolerance, dtype ?? 'float32');
  return { ...row, op: tol.op, tolerance: tol.tolerance, passed: verdict.passed, detail: verdict.detail,
    scaleUnknown: tol.cls.scale_eps > 0 };
}

/**
 * Per output: shapes, max ulp distance, max |difference|, where the worst one is, and (given
 * the graph) the pass/fail verdict under the output's protocol tolerance.
 * @returns {Array<{name, shapeBrowser, shapeNative, maxUlps, maxAbs, worstIndex, count, error?,
 *   op?, tolerance?, passed?, detail?, scaleUnknown?}>}
 */
export function compareResults(browser, native, graph = null) {
  const names = new Set([...Object.keys(browser.outputs ?? {}), ...Object.keys(native.outputs ?? {})]);
  return [...names].map((name) => {
    const b = browser.outputs?.[name];
    const n = native.outputs?.[name];
    if (!b || !n) return { name, error: `only the ${b ? 'browser' : 'native'} result has "${name}"` };
    const bd = Array.from(b.data, toNumber);
    const nd = Array.from(n.data, toNumber);
    const row = { name, shapeBrowser: b.shape, shapeNative: n.shape, count: bd.length, maxUlps: 0, maxAbs: 0, worstIndex: 0 };
    if (bd.length !== nd.length) return { ...row, error: `lengths differ: ${bd.length} vs ${nd.length}` };
    bd.forEach((x, i) => {
      const ulps = ulpDistance(Math.fround(x), Math.fround(nd[i]));
      if (ulps > row.maxUlps) { row.maxUlps = ulps; row.worstIndex = i; }
      const abs = Math.abs(x - nd[i]);
      if (abs > row.maxAbs) row.maxAbs = abs;
    });
    return judgeRow(row, ArrayBuffer.isView(b.data) ? b.data : bd, nd, graph, n.dtype ?? b.dtype);
  });
}

/** Typed array of each protocol dtype (bool: one byte per element). */
const TYPED = { float32: Float32Array, int32: Int32Array, uint32: Uint32Array, bool: Uint8Array };

/** The bytes of a typed array as base64 (chunked: String.fromCharCode takes few arguments). */
export function toBase64(view) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

/** base64 little-endian values of `dtype` -> a typed array. */
export function fromBase64(text, dtype = 'float32') {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return new (TYPED[dtype] ?? Float32Array)(bytes.buffer);
}

/** JSON for /api/execute: typed-array data as {base64}, non-finite numbers as strings. */
function graphJson(graph) {
  return JSON.stringify(graph, (_key, value) => {
    if (ArrayBuffer.isView(value)) return { base64: toBase64(value) };
    return typeof value === 'number' && !Number.isFinite(value)
      ? (Number.isNaN(value) ? 'nan' : value > 0 ? 'inf' : '-inf') : value;
  });
}

/** POST the graph to the server's native executor; throws an Error carrying {code, node}.
 * The answer's outputs carry base64 data; they come back as typed arrays of their dtype. */
export async function runNative(graph) {
  const response = await fetch(new URL('/api/execute', location.href), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: graphJson(graph),
  });
  const body = await response.json().catch(() => ({ code: 'BACKEND', message: `HTTP ${response.status}` }));
  if (!response.ok) {
    throw Object.assign(new Error(body.message ?? `HTTP ${response.status}`), { code: body.code, node: body.node });
  }
  for (const out of Object.values(body.outputs ?? {})) {
    if (out?.data?.base64 !== undefined) out.data = fromBase64(out.data.base64, out.dtype);
  }
  return body;
}
