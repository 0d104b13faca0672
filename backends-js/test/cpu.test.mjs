// The CPU reference backend, op by op, on small values whose expected results are computed
// here independently (float64 formulas, or float32 steps written out with Math.fround).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRuntime } from '../src/runtime.mjs';
import { opNames } from '../src/optable.mjs';
import { familyOps } from '../src/kernel-table.mjs';

const runtime = await createRuntime({ backend: 'cpu' });
after(() => runtime.dispose());
const covered = new Set();
const f = Math.fround;

/**
 * Run nodes (inputs given as [shape, data]) and return node `out`'s value.
 * @param {Record<string, [number[], number[]]>} inputs name -> [shape, data]; ids 0, 1, ...
 * @param {object} node the op node; operands name inputs by key
 */
async function op(name, inputs, attrs = {}, version = 2) {
  const keys = Object.keys(inputs);
  const nodes = keys.map((k, i) => ({ id: i, op: 'input', shape: inputs[k][0], data: inputs[k][1] }));
  const node = { id: 100, op: name, ...attrs };
  keys.forEach((k, i) => { node[k] = i; });
  covered.add(name);
  const r = await runtime.execute({ version, nodes: [...nodes, node], outputs: [{ name: 'o', id: 100 }] });
  return r.outputs.o;
}

/** Every element within rel*|want| + abs of the float64 expectation. */
function close(got, want, rel = 2e-6, abs = 1e-7) {
  assert.equal(got.length, want.length);
  for (let i = 0; i < want.length; i++) {
    const ok = Number.isNaN(want[i]) ? Number.isNaN(got[i])
      : got[i] === want[i] || Math.abs(got[i] - want[i]) <= rel * Math.abs(want[i]) + abs;
    assert.ok(ok, `index ${i}: got ${got[i]}, want ${want[i]}`);
  }
}

/** Bit-for-bit equality (NaN equal to NaN, +0 distinct from -0). */
function same(got, want) {
  assert.equal(got.length, want.length);
  for (let i = 0; i < want.length; i++) assert.ok(Object.is(got[i], f(want[i])), `index ${i}: got ${got[i]}, want ${want[i]}`);
}

test('input and full (non-finite values as strings)', async () => {
  covered.add('input');
  covered.add('full');
  const r = await runtime.execute({ version: 1, nodes: [{ id: 0, op: 'full', shape: [2, 2], value: 'nan' },
    { id: 1, op: 'full', shape: [], value: -2.5 }, { id: 2, op: 'input', shape: [2], data: ['inf', 0.1] }],
  outputs: [{ name: 'n', id: 0 }, { name: 's', id: 1 }, { name: 'i', id: 2 }] });
  same(r.outputs.n.data, [NaN, NaN, NaN, NaN]);
  assert.deepEqual(r.outputs.n.shape, [2, 2]);
  same(r.outputs.s.data, [-2.5]);
  assert.deepEqual(r.outputs.s.shape, []);
  same(r.outputs.i.data, [Infinity, f(0.1)]);
});

test('relu, positive and neg are exact, NaN included', async () => {
  const x = [-2, -0, 0, 0.5, NaN, Infinity, -Infinity];
  same((await op('relu', { a: [[7], x] })).data, [0, 0, 0, 0.5, 0, Infinity, 0]);
  assert.ok(Object.is((await op('relu', { a: [[1], [-0]] })).data[0], 0), 'relu(-0) is +0');
  same((await op('positive', { a: [[7], x] })).data, [0, 0, 0, 1, 0, 1, 0]);
  same((await op('neg', { a: [[7], x] })).data, [2, 0, -0, -0.5, NaN, -Infinity, Infinity]);
});

test('add, sub, mul, div: float32 arithmetic with broadcasting', async () => {
  const a = [0.1, 0.2, 0.3, 1e-3, 7, -8];
  const b = [3.3, -1.7, 1e10];
  const at = (i, j) => f(a[i * 3 + j]);
  const cases = { add: (x, y) => x + y, sub: (x, y) => x - y, mul: (x, y) => x * y, div: (x, y) => x / y };
  for (const [name, fn] of Object.entries(cases)) {
    const out = await op(name, { a: [[2, 3], a], b: [[3], b] });
    assert.deepEqual(out.shape, [2, 3]);
    same(out.data, [0, 1].flatMap((i) => [0, 1, 2].map((j) => fn(at(i, j), f(b[j])))));
  }
  // [2, 1] against [1, 3]: an outer operation.
  const outer = await op('mul', { a: [[2, 1], [2, 3]], b: [[1, 3], [5, 7, 11]] });
  same(outer.data, [10, 14, 22, 15, 21, 33]);
  // rank 4 with both sides broadcasting: out[i,j,k,l] = a[i,0,k,0] - b[j,0,l]
  const A = [1, 2, 3, 4, 5, 6];
  const B = [10, 20, 30, 40];
  const out4 = await op('sub', { a: [[2, 1, 3, 1], A], b: [[2, 1, 2], B] });
  assert.deepEqual(out4.shape, [2, 2, 3, 2]);
  const want = [];
  for (let i = 0; i < 2; i++) for (let j = 0; j < 2; j++) for (let k = 0; k < 3; k++) {
    for (let l = 0; l < 2; l++) want.push(A[i * 3 + k] - B[j * 2 + l]);
  }
  same(out4.data, want);
  // scalars on either side, and 1 / 0
  same((await op('div', { a: [[], [1]], b: [[3], [0, -0, 4]] })).data, [Infinity, -Infinity, 0.25]);
  same((await op('add', { a: [[2], [1, 2]], b: [[1], [0.5]] }, {}, 1)).data, [1.5, 2.5]);
});

test('exp, log, sqrt, tanh, sigmoid against float64', async () => {
  const x = [-3, -0.5, 0, 0.25, 1, 4];
  const x32 = x.map(f);
  close((await op('exp', { a: [[6], x] })).data, x32.map(Math.exp));
  close((await op('tanh', { a: [[6], x] })).data, x32.map(Math.tanh));
  close((await op('sigmoid', { a: [[6], x] })).data, x32.map((v) => 1 / (1 + Math.exp(-v))));
  const p = [0, 0.5, 1, 2, 1e-20, -1];
  close((await op('log', { a: [[6], p] })).data, [-Infinity, Math.log(0.5), 0, Math.log(2), Math.log(f(1e-20)), NaN]);
  same((await op('sqrt', { a: [[6], p] })).data, [0, Math.sqrt(0.5), 1, Math.sqrt(2), Math.sqrt(f(1e-20)), NaN]);
});

/** erf by its Taylor series (independent of the backend's rational approximation). */
function erfSeries(x) {
  let term = x;
  let sum = x;
  for (let n = 1; n < 120; n++) {
    term *= (-x * x) / n;
    sum += term / (2 * n + 1);
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
}

test('gelu (exact erf) and its gradient', async () => {
  const x = [-3, -1.5, -0.3, 0, 0.2, 0.7, 1.3, 2.9];
  const x32 = x.map(f);
  const phi = (v) => 0.5 * (1 + erfSeries(v / Math.SQRT2));
  close((await op('gelu', { a: [[8], x] })).data, x32.map((v) => v * phi(v)), 4e-6, 1e-7);
  const dy = [1, 2, -1, 0.5, 3, -2, 1, 0.25];
  const pdf = (v) => Math.exp(-0.5 * v * v) / Math.sqrt(2 * Math.PI);
  close((await op('gelu_grad', { a: [[8], x], b: [[8], dy] })).data,
    x32.map((v, i) => f(dy[i]) * (phi(v) + v * pdf(v))), 4e-6, 1e-7);
});

test('transpose, permute and reshape move elements exactly', async () => {
  const a = Array.from({ length: 24 }, (_, i) => i + 0.5);
  const t = await op('transpose', { a: [[2, 3, 4], a] });
  assert.deepEqual(t.shape, [2, 4, 3]);
  const wantT = [];
  for (let b = 0; b < 2; b++) for (let c = 0; c < 4; c++) for (let r = 0; r < 3; r++) wantT.push(a[b * 12 + r * 4 + c]);
  same(t.data, wantT);
  const p = await op('permute', { a: [[2, 3, 4], a] }, { dims: [2, 0, 1] });
  assert.deepEqual(p.shape, [4, 2, 3]);
  const wantP = [];
  for (let k = 0; k < 4; k++) for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) wantP.push(a[i * 12 + j * 4 + k]);
  same(p.data, wantP);
  const r = await op('reshape', { a: [[2, 3, 4], a] }, { shape: [4, -1] });
  assert.deepEqual(r.shape, [4, 6]);
  same(r.data, a);
});

test('matmul: hand-checked 2x3 @ 3x2, and batched float32 ascending-k accumulation', async () => {
  const m = await op('matmul', { a: [[2, 3], [1, 2, 3, 4, 5, 6]], b: [[3, 2], [7, 8, 9, 10, 11, 12]] }, {}, 1);
  same(m.data, [58, 64, 139, 154]);
  // [2, 1, 2, 3] @ [3, 3, 2] -> [2, 3, 2, 2]; values chosen so float32 rounding matters.
  const A = Array.from({ length: 12 }, (_, i) => f(Math.sin(i + 1) * 1000));
  const B = Array.from({ length: 18 }, (_, i) => f(Math.cos(i * 3) / 7));
  const out = await op('matmul', { a: [[2, 1, 2, 3], A], b: [[3, 3, 2], B] });
  assert.deepEqual(out.shape, [2, 3, 2, 2]);
  const want = [];
  for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) for (let r = 0; r < 2; r++) for (let c = 0; c < 2; c++) {
    let acc = 0;
    for (let k = 0; k < 3; k++) acc = f(acc + f(A[i * 6 + r * 3 + k] * B[j * 6 + k * 2 + c]));
    want.push(acc);
  }
  same(out.data, want);
  // 6 columns: four at a time and two one by one in the kernel; each an ascending-k chain.
  const C = Array.from({ length: 21 }, (_, i) => f(Math.tan(i + 0.3) * 3));
  const D = Array.from({ length: 42 }, (_, i) => f(Math.sin(i * 0.7) * 1e3));
  const wide = await op('matmul', { a: [[3, 7], C], b: [[7, 6], D] });
  const wantWide = [];
  for (let r = 0; r < 3; r++) for (let c = 0; c < 6; c++) {
    let acc = 0;
    for (let k = 0; k < 7; k++) acc = f(acc + f(C[r * 7 + k] * D[k * 6 + c]));
    wantWide.push(acc);
  }
  same(wide.data, wantWide);
});

test('sum uses the 64-lane order: 2^24 + three ones gives 2^24 + 2', async () => {
  // Lane 0 holds 2^24 (element 0); lanes 1-3 hold 1. The tree adds lane 3 to lane 1 (s = 2),
  // then lane 1 (= 2) to lane 0 (s = 1): 2^24 + 2 is exact. A left-to-right float32 sum would
  // round every 2^24 + 1 back to 2^24.
  const x = [2 ** 24, 1, 1, 1];
  same((await op('sum', { a: [[4], x] }, {}, 1)).data, [2 ** 24 + 2]);
  let sequential = 0;
  for (const v of x) sequential = f(sequential + v);
  assert.equal(sequential, 2 ** 24, 'the order is observable');
  // With 65 elements, element 64 (= 2) joins element 0 in lane 0: 2^24 + 2; lanes 1 and 3
  // (ones) meet at s = 2, and their 2 is added at s = 1: 2^24 + 4. Left to right gives 2^24 + 2.
  const y = new Array(65).fill(0);
  y[0] = 2 ** 24;
  y[1] = 1;
  y[3] = 1;
  y[64] = 2;
  same((await op('sum', { a: [[65], y] })).data, [2 ** 24 + 4]);
});

test('sum and mean over an axis, keepdim', async () => {
  const a = Array.from({ length: 24 }, (_, i) => (i % 5) - 1.25);
  const s = await op('sum', { a: [[2, 3, 4], a] }, { axis: 1 });
  assert.deepEqual(s.shape, [2, 4]);
  const want = [];
  for (let i = 0; i < 2; i++) for (let k = 0; k < 4; k++) want.push(a[i * 12 + k] + a[i * 12 + 4 + k] + a[i * 12 + 8 + k]);
  close(s.data, want);
  const m = await op('mean', { a: [[2, 3, 4], a] }, { axis: -1, keepdim: true });
  assert.deepEqual(m.shape, [2, 3, 1]);
  const wantM = [];
  for (let r = 0; r < 6; r++) wantM.push((a[r * 4] + a[r * 4 + 1] + a[r * 4 + 2] + a[r * 4 + 3]) / 4);
  close(m.data, wantM);
  close((await op('mean', { a: [[2, 3, 4], a] })).data, [a.reduce((p, v) => p + v, 0) / 24]);
  // 100 values along an axis use several lanes per row.
  const big = Array.from({ length: 200 }, (_, i) => Math.sin(i));
  const rows = await op('sum', { a: [[2, 100], big] }, { axis: 1 });
  close(rows.data, [0, 1].map((r) => big.slice(r * 100, r * 100 + 100).reduce((p, v) => p + f(v), 0)), 1e-5, 1e-5);
});

/** float64 softmax of a list. */
const softmax = (xs) => {
  const m = Math.max(...xs);
  const e = xs.map((v) => Math.exp(v - m));
  const s = e.reduce((p, v) => p + v, 0);
  return e.map((v) => v / s);
};

test('softmax and log_softmax along an axis', async () => {
  const a = [1, 2, 3, 1000, -5, 0.5];
  const rowsSm = await op('softmax', { a: [[2, 3], a] });
  close(rowsSm.data, [...softmax(a.slice(0, 3)), ...softmax(a.slice(3))]);
  const colsSm = await op('softmax', { a: [[2, 3], a] }, { axis: 0 });
  const cols = [0, 1, 2].map((j) => softmax([a[j], a[3 + j]]));
  close(colsSm.data, [0, 1].flatMap((i) => cols.map((c) => c[i])));
  const ls = await op('log_softmax', { a: [[2, 3], a] });
  close(ls.data, [...softmax(a.slice(0, 3)), ...softmax(a.slice(3))].map(Math.log), 2e-6, 2e-6);
});

test('cross_entropy and its gradient', async () => {
  const logits = [2, 1, 0.1, 0.5, 2.5, -1, 0, 0, 3, 1, 1, 1];
  const target = [1, 0, 0, 0, 1, 0, 0, 0, 1, 0.5, 0.5, 0];
  const rows = [0, 1, 2, 3].map((r) => ({ p: softmax(logits.slice(r * 3, r * 3 + 3)), t: target.slice(r * 3, r * 3 + 3) }));
  const loss = rows.reduce((s, { p, t }) => s - t.reduce((q, tc, c) => q + tc * Math.log(p[c]), 0), 0) / 4;
  const ce = await op('cross_entropy', { a: [[4, 3], logits], b: [[4, 3], target] });
  assert.deepEqual(ce.shape, []);
  close(ce.data, [loss]);
  const grad = await op('cross_entropy_grad', { a: [[4, 3], logits], b: [[4, 3], target] });
  close(grad.data, rows.flatMap(({ p, t }) => p.map((pc, c) => (pc - t[c]) / 4)), 2e-6, 1e-7);
});

test('optimizer updates', async () => {
  const p = [1, -2, 0.5];
  const g = [0.1, 0.2, -0.3];
  const p32 = p.map(f);
  const g32 = g.map(f);
  close((await op('sgd_update', { a: [[3], p], b: [[3], g] }, { lr: 0.1 })).data, p32.map((v, i) => v - 0.1 * g32[i]));
  close((await op('momentum_update', { a: [[3], p], b: [[3], g] }, { momentum: 0.9 })).data,
    p32.map((v, i) => 0.9 * v + g32[i]));
  close((await op('adam_m', { a: [[3], p], b: [[3], g] })).data, p32.map((v, i) => 0.9 * v + 0.1 * g32[i]));
  close((await op('adam_v', { a: [[3], [1, 2, 3]], b: [[3], g] }, { beta2: 0.99 })).data,
    [1, 2, 3].map((v, i) => 0.99 * v + 0.01 * g32[i] * g32[i]));
  const m = [0.01, -0.02, 0.03];
  const v = [1e-4, 4e-4, 9e-4];
  const out = await op('adam_update', { a: [[3], p], b: [[3], m], c: [[3], v], t: [[1], [3]] },
    { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8 });
  const want = p32.map((pv, i) => pv - (0.01 / (1 - 0.9 ** 3)) * f(m[i]) /
    (Math.sqrt(f(v[i])) / Math.sqrt(1 - 0.999 ** 3) + 1e-8));
  close(out.data, want);
});

test('life: blinker, and a glider crossing the torus edge', async () => {
  const grid = (h, w, cells) => {
    const g = new Array(h * w).fill(0);
    for (const [r, c] of cells) g[r * w + c] = 1;
    return g;
  };
  // Independent rule: count live neighbours with wrap-around.
  const step = (g, h, w) => g.map((_, i) => {
    const r = Math.floor(i / w);
    const c = i % w;
    let n = 0;
    for (const dr of [-1, 0, 1]) for (const dc of [-1, 0, 1]) {
      if (dr || dc) n += g[((r + dr + h) % h) * w + ((c + dc + w) % w)] > 0.5 ? 1 : 0;
    }
    return n === 3 || (n === 2 && g[i] > 0.5) ? 1 : 0;
  });
  const blinker = grid(5, 5, [[2, 1], [2, 2], [2, 3]]);
  const out = await op('life', { a: [[5, 5], blinker] }, {}, 1);
  same(out.data, grid(5, 5, [[1, 2], [2, 2], [3, 2]]));
  // A glider at the bottom-right corner wraps to the top-left; values 0.6/0.4 test the > 0.5 rule.
  const glider = grid(6, 7, [[4, 6], [5, 0], [0, 5], [0, 6], [0, 0]]).map((v) => (v ? 0.6 : 0.4));
  same((await op('life', { a: [[6, 7], glider] }, {}, 1)).data, step(glider, 6, 7));
});

test('abs, square, clamp (v3): exact, NaN kept, signed zeros as the protocol says', async () => {
  const x = [-2, -0, 0, 0.5, NaN, Infinity, -Infinity, 1.5e19];
  same((await op('abs', { a: [[8], x] }, {}, 3)).data, [2, 0, 0, 0.5, NaN, Infinity, Infinity, 1.5e19]);
  assert.ok(Object.is((await op('abs', { a: [[1], [-0]] }, {}, 3)).data[0], 0), 'abs(-0) is +0');
  same((await op('square', { a: [[8], x] }, {}, 3)).data,
    [4, 0, 0, 0.25, NaN, Infinity, Infinity, f(f(1.5e19) * f(1.5e19))]);
  same((await op('clamp', { a: [[8], x] }, { min: -1, max: 0.25 }, 3)).data,
    [-1, -0, 0, 0.25, NaN, 0.25, -1, 0.25]);
  same((await op('clamp', { a: [[8], x] }, { min: 0 }, 3)).data, [0, -0, 0, 0.5, NaN, Infinity, 0, 1.5e19]);
  same((await op('clamp', { a: [[3], [5, -5, 0]] }, { min: 2, max: 1 }, 3)).data, [1, 1, 1]);
  same((await op('clamp', { a: [[2], [5, -5]] }, { max: null }, 3)).data, [5, -5]);
});

test('reduce_max/min (IEEE maximum: NaN propagates, -0 < +0), argmax/argmin (first index, first NaN)', async () => {
  const rows = [[2, 4], [-0, 0, 0, -0, -1, -0, NaN, 3]];
  same((await op('reduce_max', { a: rows }, { axis: 1 }, 3)).data, [0, NaN]);
  same((await op('reduce_min', { a: rows }, { axis: 1 }, 3)).data, [-0, NaN]);
  same((await op('reduce_max', { a: [[2, 2], [-0, 0, 0, -0]] }, { axis: 0 }, 3)).data, [0, 0]);
  same((await op('reduce_min', { a: [[2, 2], [-0, 0, 0, -0]] }, { axis: 0 }, 3)).data, [-0, -0]);
  const m = await op('reduce_max', { a: [[2, 3], [1, 5, 5, 7, 0, 7]] }, { keepdim: true }, 3);
  assert.deepEqual(m.shape, [1, 1]);
  same(m.data, [7]);
  const t = [[2, 5], [1, 7, 3, 7, 7, -2, -2, NaN, 0, NaN]];
  assert.deepEqual([...(await op('argmax', { a: t }, { axis: 1 }, 3)).data], [1, 2]);
  assert.deepEqual([...(await op('argmin', { a: t }, { axis: 1 }, 3)).data], [0, 2]);
  const flat = await op('argmax', { a: t }, {}, 3);
  assert.deepEqual([flat.shape, [...flat.data]], [[], [7]], 'axis null: the flattened index');
  assert.deepEqual([...(await op('argmax', { a: [[3], [-0, 0, -0]] }, {}, 3)).data], [0], '-0 ties +0');
});

// ---- q4_k / q6_k weights and matmul_fixed (the corpus checks every lane) ----

/** One q4_k block: d 1, dmin 0.5, scales 1..8, mins 0..7, quants l % 16 (low) and 15 - l % 16. */
function q4kBlock() {
  const b = new Uint8Array(144);
  b.set([0x00, 0x3c, 0x00, 0x38, 1, 2, 3, 4, 0, 1, 2, 3]);
  for (let j = 4; j < 8; j++) b[4 + j + 4] = (j + 1) | (j << 4);
  for (let l = 0; l < 128; l++) b[16 + l] = (l % 16) | ((15 - (l % 16)) << 4);
  const want = [];
  for (let i = 0; i < 256; i++) {
    const j = i >> 5;
    const l = i % 32;
    const byte = b[16 + (j >> 1) * 32 + l];
    want.push((j + 1) * ((j & 1) ? byte >> 4 : byte & 15) - 0.5 * j);
  }
  return { bytes: b, want };
}

async function quantOp(graphNodes, version = 2) {
  const r = await runtime.execute({ version, nodes: graphNodes, outputs: [{ name: 'o', id: 9 }] });
  return r.outputs.o;
}

test('q4_k: dequantize and matmul_q decode ggml blocks (scales and mins of both packings)', async () => {
  const { bytes, want } = q4kBlock();
  const w = { id: 0, op: 'input', shape: [1, 256], dtype: 'q4_k', data: bytes };
  covered.add('dequantize').add('matmul_q');
  same((await quantOp([w, { id: 9, op: 'dequantize', a: 0 }])).data, want);
  const x = { id: 1, op: 'input', shape: [2, 256], data: Float32Array.from({ length: 512 }, (_, i) => (i < 256 ? 1 : (i - 256) % 3)) };
  const out = await quantOp([w, x, { id: 9, op: 'matmul_q', a: 1, b: 0 }]);
  assert.deepEqual(out.shape, [2, 1]);
  same(out.data, [want.reduce((s, v) => s + v, 0), want.reduce((s, v, i) => s + v * (i % 3), 0)]);
});

test('q6_k: d * int8 scale * (q - 32), 6-bit quants from ql and qh', async () => {
  const b = new Uint8Array(210);
  for (let i = 0; i < 128; i++) b[i] = (i * 7) & 0xff;
  for (let i = 0; i < 64; i++) b[128 + i] = (i * 13) & 0xff;
  for (let i = 0; i < 16; i++) b[192 + i] = (i * 37 - 128) & 0xff;
  b.set([0x00, 0xb8], 208); // d = -0.5
  const want = [];
  for (let i = 0; i < 256; i++) {
    const h = i >> 7; const t = (i >> 5) & 3; const l = i & 31;
    const ql = b[h * 64 + l + (t & 1) * 32];
    const q = ((t < 2 ? ql & 15 : ql >> 4) | (((b[128 + h * 32 + l] >> (2 * t)) & 3) << 4)) - 32;
    want.push(-0.5 * (((b[192 + h * 8 + (l >> 4) + 2 * t]) << 24) >> 24) * q);
  }
  const w = { id: 0, op: 'input', shape: [1, 256], dtype: 'q6_k', data: b };
  same((await quantOp([w, { id: 9, op: 'dequantize', a: 0 }])).data, want);
});

test('q8_0 and q4_0: d * q and d * (nibble - 8); dequantize_rows decodes only the rows asked', async () => {
  covered.add('dequantize_rows');
  // two q8_0 blocks (rows of 32): d = 0.5 then -2, quants -128..127 stepping
  const q8 = new Uint8Array(68);
  q8.set([0x00, 0x38], 0); q8.set([0x00, 0xc0], 34);
  for (let j = 0; j < 32; j++) { q8[2 + j] = (j * 9 - 128) & 0xff; q8[36 + j] = (j * 5) & 0xff; }
  const want8 = [];
  for (let j = 0; j < 32; j++) want8.push(0.5 * ((((j * 9 - 128) & 0xff) << 24) >> 24));
  for (let j = 0; j < 32; j++) want8.push(-2 * ((((j * 5) & 0xff) << 24) >> 24));
  const w8 = { id: 0, op: 'input', shape: [2, 32], dtype: 'q8_0', data: q8 };
  same((await quantOp([w8, { id: 9, op: 'dequantize', a: 0 }], 7)).data, want8);
  const idx = { id: 1, op: 'input', shape: [3], dtype: 'int32', data: [1, 0, 1] };
  const rows = await quantOp([w8, idx, { id: 9, op: 'dequantize_rows', a: 0, idx: 1 }], 7);
  assert.deepEqual(rows.shape, [3, 32]);
  same(rows.data, [...want8.slice(32), ...want8.slice(0, 32), ...want8.slice(32)]);
  // one q4_0 block: d = 0.25, byte j = j | (15 - j) << 4: values j - 8 then 7 - j
  const q4 = new Uint8Array(18);
  q4.set([0x00, 0x34], 0);
  for (let j = 0; j < 16; j++) q4[2 + j] = j | ((15 - j) << 4);
  const want4 = [...Array.from({ length: 16 }, (_, j) => 0.25 * (j - 8)),
    ...Array.from({ length: 16 }, (_, j) => 0.25 * (7 - j))];
  const w4 = { id: 0, op: 'input', shape: [1, 32], dtype: 'q4_0', data: q4 };
  same((await quantOp([w4, { id: 9, op: 'dequantize', a: 0 }], 7)).data, want4);
  const x = { id: 1, op: 'input', shape: [1, 32], data: new Float32Array(32).fill(1) };
  same((await quantOp([w4, x, { id: 9, op: 'matmul_q', a: 1, b: 0 }], 7)).data,
    [want4.reduce((a, b) => a + b, 0)]);
});

test('matmul_fixed: round half even to fixed point, int64 sums past 2^32, saturation', async () => {
  covered.add('matmul_fixed');
  const run = async (a, sa, b, sb, frac) => (await quantOp([
    { id: 0, op: 'input', shape: sa, data: a }, { id: 1, op: 'input', shape: sb, data: b },
    { id: 9, op: 'matmul_fixed', a: 0, b: 1, frac_bits: frac }])).data;
  same(await run([1.5, -2.25], [1, 2], [2, 4], [2, 1], 8), [-6]);
  same(await run([30000, 30000, 30000, 30000], [1, 4], [30000, 30000, 30000, 30000], [4, 1], 0), [3.6e9]);
  same(await run([3e9, 0.5, 1.5, NaN], [1, 4], [1, 1, 1, 1], [4, 1], 0), [2147483647 + 0 + 2]);
});

test('the student ops are refused with UNSUPPORTED naming the op (lanes.json says why)', async () => {
  const source = '@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n' +
    '@compute @workgroup_size(1) fn main() { o[0] = 1.0; }';
  const graph = { version: 5, nodes: [{ id: 0, op: 'wgsl', inputs: [], source,
    results: [{ name: 'o', shape: [1], dtype: 'float32' }], workgroups: [1] },
  { id: 1, op: 'wgsl_output', a: 0, index: 0 }], outputs: [{ name: 'o', id: 1 }] };
  await assert.rejects(runtime.execute(graph), (e) => e.code === 'UNSUPPORTED' &&
    /no kernel for wgsl \(node 0\)/.test(e.message));
  covered.add('wgsl');
  covered.add('wgsl_output');
});

test('v3 select ops: maximum/minimum (NaN, -0 < +0), masks, where, cast rules', async () => {
  const a = [[5], [-0, 0, NaN, 1, -2]];
  const b = [[5], [0, -0, 1, NaN, -2]];
  same((await op('maximum', { a, b }, {}, 3)).data, [0, 0, NaN, NaN, -2]);
  same((await op('minimum', { a, b }, {}, 3)).data, [-0, -0, NaN, NaN, -2]);
  const masks = { eq: [1, 1, 0, 0, 1], ne: [0, 0, 1, 1, 0], lt: [0, 0, 0, 0, 0],
    le: [1, 1, 0, 0, 1], gt: [0, 0, 0, 0, 0], ge: [1, 1, 0, 0, 1] };
  for (const [name, want] of Object.entries(masks)) {
    const r = await op(name, { a, b }, {}, 3);
    assert.equal(r.dtype, 'bool');
    assert.deepEqual([...r.data], want, name);
  }
  const lt = await op('lt', { a: [[2, 1], [1, 3]], b: [[3], [0, 2, 4]] }, {}, 3);
  assert.deepEqual([lt.shape, [...lt.data]], [[2, 3], [0, 1, 1, 0, 0, 1]], 'broadcasting');
  const cast = await op('cast', { a: [[7], [NaN, -0.5, 2.9, -2.9, 3e9, -3e9, Infinity]] },
    { dtype: 'int32' }, 3);
  assert.deepEqual([...cast.data], [0, 0, 2, -2, 2147483647, -2147483648, 2147483647]);
  const u = await op('cast', { a: [[4], [-1, -0.5, 5e9, 7.5]] }, { dtype: 'uint32' }, 3);
  assert.deepEqual([...u.data], [0, 0, 4294967295, 7]);
  const bool = await op('cast', { a: [[4], [NaN, -0, 0.25, 0]] }, { dtype: 'bool' }, 3);
  assert.deepEqual([...bool.data], [1, 0, 1, 0]);
  covered.add('where');
  const w = await runtime.execute({ version: 3, nodes: [
    { id: 0, op: 'input', shape: [2, 1], dtype: 'bool', data: [1, 0] },
    { id: 1, op: 'input', shape: [3], data: [1, 2, 3] }, { id: 2, op: 'full', shape: [], value: -0 },
    { id: 3, op: 'where', cond: 0, a: 1, b: 2 }], outputs: [{ name: 'o', id: 3 }] });
  same(w.outputs.o.data, [1, 2, 3, -0, -0, -0]);
});

test('v3 hash_uniform and dropout: 24-bit uniforms in [0, 1), a counter changes them, the mask', async () => {
  const run = async (counter, extra = {}) => (await runtime.execute({ version: 3, nodes: [
    { id: 0, op: 'input', shape: [], dtype: 'uint32', data: [counter] },
    { id: 1, op: 'hash_uniform', counter: 0, shape: [4096], seed: 9 },
    { id: 2, op: 'dropout', a: 1, counter: 0, seed: 9, p: 0.5, ...extra },
    { id: 3, op: 'dropout', a: 1, counter: 0, seed: 9, p: 0 }],
  outputs: [{ name: 'u', id: 1 }, { name: 'd', id: 2 }, { name: 'd0', id: 3 }] })).outputs;
  covered.add('hash_uniform');
  covered.add('dropout');
  const first = await run(0);
  const u = first.u.data;
  assert.ok(u.every((v) => v >= 0 && v < 1 && Number.isInteger(v * 2 ** 24)));
  const mean = u.reduce((s, v) => s + v, 0) / u.length;
  assert.ok(Math.abs(mean - 0.5) < 0.02, `mean ${mean}`);
  same((await run(0)).u.data, u);
  const other = (await run(4294967295)).u.data;
  assert.ok(other.filter((v, i) => v !== u[i]).length > 4000, 'another counter, other values');
  // kept where u >= p, scaled by float32(1 / (1 - 0.5)) = 2; p = 0 is the identity
  same(first.d.data, Float32Array.from(u, (v) => (v >= 0.5 ? v * 2 : 0)));
  same(first.d0.data, u);
});

test('every op of the op table was exercised by these tests', () => {
  // The map ops' kernels are generated from the kernel table (cpu/maps.mjs); the conformance
  // corpus checks each of them on this backend against the reference (node-cpu lane of
  // e2e/test_conformance_cpu.py), so a new map row needs no hand-written test here.
  const generated = new Set([...familyOps('map1'), ...familyOps('map2')]);
  // the v4 selection ops have their own file, select.test.mjs (every node backend)
  const elsewhere = new Set(['slice', 'slice_scatter', 'index_select', 'gather', 'index_add',
    'scatter_add', 'concat', 'pad',
    // the v6 window ops: conv.test.mjs
    'conv2d', 'max_pool2d', 'avg_pool2d', 'resize']);
  const missing = opNames().filter((o) => !covered.has(o) && !generated.has(o) && !elsewhere.has(o));
  assert.deepEqual(missing, []);
});

