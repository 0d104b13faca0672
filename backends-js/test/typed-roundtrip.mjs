// Typed round trips of all four dtypes on one runtime (any backend): inputs that are outputs,
// given by value (list, typed array, base64) or fed, constant, carried across steps and swapped,
// in execute and in prepared sessions. Returns the list of problems (empty: all passed), so
// the node tests (cpu, wasm) and the browser tests (webgl2, webgpu) share one check.
import { toBase64Data } from '../src/dtypes.mjs';

/** Bit patterns worth carrying: extremes, signs, a NaN payload for float32. */
const VALUES = {
  float32: () => new Float32Array(new Uint32Array([0x7fc00001, 0x80000000, 0x3fc00000,
    0xff800000, 0x00000001]).buffer),
  int32: () => Int32Array.of(-2147483648, -1, 0, 7, 2147483647),
  uint32: () => Uint32Array.of(0, 1, 2147483648, 4000000000, 4294967295),
  bool: () => Uint8Array.of(1, 0, 0, 1, 1),
};
/** Sessions refuse non-finite float32 read-backs: finite bits (-0, a subnormal, the maximum). */
const FINITE_FLOAT32 = () => new Float32Array(new Uint32Array([0x80000000, 0x3fc00000, 0x00000001,
  0x7f7fffff, 0xc2f60000]).buffer);
const CTOR = { float32: Float32Array, int32: Int32Array, uint32: Uint32Array, bool: Uint8Array };
const DTYPES = Object.keys(VALUES);

/** @param {ArrayLike<number>} a */
const bits = (a) => Array.from(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));

/**
 * @param {string[]} problems @param {string} what @param {{dtype?: string, data: any}|any} got
 * @param {string} dtype @param {ArrayLike<number>} want
 */
function expectTyped(problems, what, got, dtype, want) {
  const data = got?.data ?? got;
  if (got?.dtype !== undefined && got.dtype !== dtype) problems.push(`${what}: dtype ${got.dtype}, want ${dtype}`);
  if (!(data instanceof CTOR[dtype])) {
    problems.push(`${what}: a ${data?.constructor?.name}, want ${CTOR[dtype].name}`);
    return;
  }
  if (bits(data).join() !== bits(want).join()) {
    problems.push(`${what}: [${Array.from(data)}], want [${Array.from(want)}]`);
  }
}

/** @param {string} dtype @param {number} id @param {any} data */
const input = (dtype, id, data) => ({ id, op: 'input', shape: [5], dtype,
  ...(data === undefined ? {} : { data }) });

/** execute: each dtype's input as an output, its data in three forms, beside a float32 op. */
async function executeChecks(rt, problems) {
  const nodes = [];
  const outputs = [];
  DTYPES.forEach((dtype, k) => {
    const v = VALUES[dtype]();
    const forms = { typed: v, list: dtype === 'float32' ? null : Array.from(v),
      base64: toBase64Data(v) };
    Object.entries(forms).forEach(([form, data], j) => {
      if (data === null) return;
      const id = 10 * k + j;
      nodes.push(input(dtype, id, data));
      outputs.push({ name: `${dtype}_${form}`, id });
    });
  });
  nodes.push({ id: 90, op: 'input', shape: [2], data: [1, -2] }, { id: 91, op: 'neg', a: 90 });
  outputs.push({ name: 'neg', id: 91 });
  const r = await rt.execute({ version: 3, nodes, outputs });
  for (const { name } of outputs.slice(0, -1)) {
    const dtype = name.split('_')[0];
    expectTyped(problems, `execute ${name}`, r.outputs[name], dtype, VALUES[dtype]());
  }
  expectTyped(problems, 'execute neg', r.outputs.neg, 'float32', Float32Array.of(-1, 2));
}

/**
 * A session per dtype: A (data) and B (data) swap by carry every step, F is fed; all three are
 * outputs (read before each step's carry); downloads by input id see the carried values.
 */
async function sessionChecks(rt, problems, dtype) {
  const v = dtype === 'float32' ? FINITE_FLOAT32() : VALUES[dtype]();
  const a0 = v;
  const b0 = v.slice().reverse();
  const f1 = CTOR[dtype].from(v.map((_, i) => v[(i + 2) % v.length]));
  const f2 = CTOR[dtype].from(v.map((_, i) => v[(i + 1) % v.length]));
  const graph = { version: 3, nodes: [input(dtype, 0, a0), input(dtype, 1, toBase64Data(b0)),
    input(dtype, 2)], outputs: [{ name: 'a', id: 0 }, { name: 'b', id: 1 }, { name: 'f', id: 2 }] };
  const s = await rt.prepare(graph, { feeds: [2], carry: { 0: 'b', 1: 'a' } });
  try {
    const r1 = await s.run([{ 2: f1 }]);
    expectTyped(problems, `${dtype} session step 1 a`, r1.outputs.a, dtype, a0);
    expectTyped(problems, `${dtype} session step 1 f`, r1.outputs.f, dtype, f1);
    expectTyped(problems, `${dtype} carried into A`, await s.download(0), dtype, b0);
    const feed2 = dtype === 'float32' ? f2 : Array.from(f2);
    const r2 = await s.run([{ 2: f1 }, { 2: feed2 }]);
    // run 2 starts from A = B0, B = A0; its first step's carry swaps them back
    expectTyped(problems, `${dtype} session 2 steps a`, r2.outputs.a, dtype, a0);
    expectTyped(problems, `${dtype} session 2 steps b`, r2.outputs.b, dtype, b0);
    expectTyped(problems, `${dtype} session 2 steps f`, r2.outputs.f, dtype, f2);
    expectTyped(problems, `${dtype} carried into A twice more`, await s.download(0), dtype, b0);
    expectTyped(problems, `${dtype} carried into B`, await s.download(1), dtype, a0);
    const bad = dtype === 'float32' ? ['x', 0, 0, 0, 0] : [0.5, 0, 0, 0, 0];
    const refused = await s.run([{ 2: bad }]).then(() => null, (e) => e);
    if (refused?.code !== 'VALIDATION' || !/node 2 \(input\): step 0: feed/.test(refused.message)) {
      problems.push(`${dtype}: a feed not of the dtype gave ${refused?.code} ${refused?.message}`);
    }
    const r3 = await s.run(1);
    if (r3) problems.push(`${dtype}: a step count ran a session with feeds`);
  } catch (err) {
    if (err?.code !== 'VALIDATION' || !/feed map per step/.test(err.message)) {
      problems.push(`${dtype} session: ${err?.code} ${err?.message}`);
    }
  } finally {
    s.dispose();
  }
}

/**
 * @param {{execute: Function, prepare: Function}} rt an open runtime
 * @returns {Promise<string[]>} problems, empty when every round trip is exact
 */
export async function typedRoundTrips(rt) {
  /** @type {string[]} */
  const problems = [];
  await executeChecks(rt, problems);
  for (const dtype of DTYPES) await sessionChecks(rt, problems, dtype);
  return problems;
}
