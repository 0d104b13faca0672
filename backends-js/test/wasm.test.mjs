// The wasm backend under node: bit-exact kernels where the protocol fixes the bits (64-lane
// reductions, ascending-k matmul without contraction, masks, data movement, broadcast
// arithmetic), memory reuse, and the refusals. Tolerance-checked numerics against the float64
// reference are the conformance corpus (e2e/test_wasm_browser.py runs the node and browser
// lanes); prepared sessions are in wasm-session.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createBackend, name } from '../src/backends/wasm.mjs';
import { createRuntime } from '../src/runtime.mjs';
import { validateGraph } from '../src/validate.mjs';
import { GpuLabError } from '../src/errors.mjs';
import { random } from '../src/models/mlp.mjs';

const f = Math.fround;
const rnd = random(7);
const values = (n, scale = 1) => Float32Array.from({ length: n }, () => f((rnd() * 2 - 1) * scale));
const count = (shape) => shape.reduce((p, d) => p * d, 1);

/** Runs a graph of inputs + one op on the wasm backend; returns the output's Float32Array. */
async function runOp(backend, inputs, node) {
  const nodes = inputs.map(([shape, data], id) => ({ id, op: 'input', shape, data }));
  const id = nodes.length;
  nodes.push({ id, ...node });
  const checked = validateGraph({ version: 2, nodes, outputs: [{ name: 'y', id }] });
  const program = await backend.prepare(checked, { feeds: [], carry: new Map(), keep: [] });
  try {
    return (await program.run([new Map()], [id])).get(id);
  } finally {
    program.dispose();
  }
}

/** The protocol's 64-lane order in float32 (docs/protocol.md, Numerics). */
function laneReduce(xs, combine = (a, b) => f(a + b), init = 0) {
  const lane = new Array(64).fill(init);
  xs.forEach((x, k) => { lane[k % 64] = combine(lane[k % 64], x); });
  for (let s = 32; s >= 1; s /= 2) for (let i = 0; i < s; i++) lane[i] = combine(lane[i], lane[i + s]);
  return lane[0];
}

const bits = (a) => Array.from(new Uint32Array(Float32Array.from(a).buffer));
const sameBits = (got, want, what) => assert.deepEqual(bits(got), bits(want), what);

test('the backend describes itself as wasm32+simd128 CPU kernels, not software', async () => {
  const be = await createBackend();
  assert.equal(name, 'wasm');
  assert.equal(be.name, 'wasm');
  assert.deepEqual(be.info, { vendor: 'gpu-lab', architecture: 'wasm32+simd128',
    description: 'WebAssembly kernels (CPU)', software: false });
  be.dispose();
});

test('sum and mean follow the 64-lane order bit for bit (all, rows, SIMD columns, tails)', async () => {
  const be = await createBackend();
  for (const shape of [[1], [63], [64], [65], [1000], [3, 130], [200, 5], [64, 256], [2, 67, 9]]) {
    const a = values(count(shape), 100);
    sameBits(await runOp(be, [[shape, a]], { op: 'sum', a: 0 }), [laneReduce(a)], `sum ${shape}`);
    for (let axis = 0; axis < shape.length; axis++) {
      const outer = count(shape.slice(0, axis));
      const n = shape[axis];
      const inner = count(shape.slice(axis + 1));
      const want = [];
      for (let o = 0; o < outer; o++) {
        for (let i = 0; i < inner; i++) {
          want.push(laneReduce(Array.from({ length: n }, (_, k) => a[(o * n + k) * inner + i])));
        }
      }
      sameBits(await runOp(be, [[shape, a]], { op: 'sum', a: 0, axis }), want, `sum ${shape} axis ${axis}`);
      sameBits(await runOp(be, [[shape, a]], { op: 'mean', a: 0, axis, keepdim: true }),
        want.map((s) => f(s / n)), `mean ${shape} axis ${axis}`);
    }
  }
  be.dispose();
});

/** Naive matmul, ascending k from 0, one rounding per multiply and per add. */
function naiveMatmul(a, b, m, k, n) {
  const c = new Float32Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let p = 0; p < k; p++) acc = f(acc + f(a[i * k + p] * b[p * n + j]));
      c[i * n + j] = acc;
    }
  }
  return c;
}

test('matmul equals the naive ascending-k loop bit for bit (tiles, tails, batches)', async () => {
  const be = await createBackend();
  // past one k block (256), n block (512) and m block (64) of the blocked kernel, with tails
  for (const [m, k, n] of [[1, 1, 1], [4, 8, 8], [5, 3, 9], [7, 33, 17], [64, 78, 26], [3, 200, 10],
    [70, 300, 21], [3, 5, 530], [2, 520, 3]]) {
    const a = values(m * k);
    const b = values(k * n);
    sameBits(await runOp(be, [[[m, k], a], [[k, n], b]], { op: 'matmul', a: 0, b: 1 }),
      naiveMatmul(a, b, m, k, n), `matmul ${m}x${k}x${n}`);
  }
  // batched with a broadcast batch axis: [2, 1, 3, 4] @ [3, 4, 5] -> [2, 3, 3, 5]
  const a = values(2 * 3 * 4);
  const b = values(3 * 4 * 5);
  const got = await runOp(be, [[[2, 1, 3, 4], a], [[3, 4, 5], b]], { op: 'matmul', a: 0, b: 1 });
  const want = [];
  for (let i = 0; i < 2; i++) {
    for (let j = 0; j < 3; j++) {
      want.push(...naiveMatmul(a.subarray(i * 12, i * 12 + 12), b.subarray(j * 20, j * 20 + 20), 3, 4, 5));
    }
  }
  sameBits(got, want, 'batched matmul');
  be.dispose();
});

test('a transpose read only by matmul is fused (not materialized) and gives the same bits', async () => {
  const be = await createBackend();
  const [m, k, n] = [67, 261, 11];
  const at = values(k * m); // a^T stored [k, m]
  const bt = values(n * k); // b^T stored [n, k]
  const nodes = [
    { id: 0, op: 'input', shape: [k, m], data: at }, { id: 1, op: 'input', shape: [n, k], data: bt },
    { id: 2, op: 'transpose', a: 0 }, { id: 3, op: 'transpose', a: 1 },
    { id: 4, op: 'matmul', a: 2, b: 3 },
  ];
  const checked = validateGraph({ version: 2, nodes, outputs: [{ name: 'c', id: 4 }] });
  const program = await be.prepare(checked, { feeds: [], carry: new Map(), keep: [] });
  assert.deepEqual([...program.fused].sort(), [2, 3]);
  const got = (await program.run([new Map()], [4])).get(4);
  program.dispose();
  const tr = (x, r, c) => Float32Array.from({ length: r * c }, (_, i) => x[(i % c) * r + Math.floor(i / c)]);
  sameBits(got, naiveMatmul(tr(at, m, k), tr(bt, k, n), m, k, n), 'fused transposes');
  be.dispose();
});

test('exact ops keep every bit: relu/positive (NaN -> 0), neg, permute, transpose, reshape, full', async () => {
  const be = await createBackend();
  const a = Float32Array.from([NaN, -0, 0, -1.5, 2.5, Infinity, -Infinity, 1e-45, -3, 7, 8, 9]);
  sameBits(await runOp(be, [[[12], a]], { op: 'relu', a: 0 }), Array.from(a, (x) => (x > 0 ? x : 0)));
  sameBits(await runOp(be, [[[12], a]], { op: 'positive', a: 0 }), Array.from(a, (x) => (x > 0 ? 1 : 0)));
  const neg = await runOp(be, [[[12], a]], { op: 'neg', a: 0 });
  assert.deepEqual(bits(neg), bits(a).map((u) => (u ^ 0x80000000) >>> 0));
  const x = values(2 * 3 * 4 * 5);
  const p = await runOp(be, [[[2, 3, 4, 5], x]], { op: 'permute', a: 0, dims: [3, 1, 0, 2] });
  const want = [];
  for (let i3 = 0; i3 < 5; i3++) for (let i1 = 0; i1 < 3; i1++) for (let i0 = 0; i0 < 2; i0++) {
    for (let i2 = 0; i2 < 4; i2++) want.push(x[((i0 * 3 + i1) * 4 + i2) * 5 + i3]);
  }
  sameBits(p, want, 'permute');
  const t = await runOp(be, [[[3, 4, 5], x.subarray(0, 60)]], { op: 'transpose', a: 0 });
  sameBits(t, Array.from({ length: 60 }, (_, i) => {
    const [b, r, c] = [Math.floor(i / 20), Math.floor(i / 4) % 5, i % 4];
    return x[b * 20 + c * 5 + r];
  }), 'transpose');
  sameBits(await runOp(be, [[[2, 6], a]], { op: 'reshape', a: 0, shape: [3, -1] }), a, 'reshape');
  const full = await runOp(be, [], { op: 'full', shape: [5], value: 'nan' });
  assert.ok(full.every(Number.isNaN));
  sameBits(await runOp(be, [], { op: 'full', shape: [3], value: -0 }), [-0, -0, -0], 'full -0');
  be.dispose();
});

test('broadcast add/sub/mul/div are one float32 rounding per element, every layout', async () => {
  const be = await createBackend();
  const ops = { add: (x, y) => f(x + y), sub: (x, y) => f(x - y), mul: (x, y) => f(x * y),
    div: (x, y) => f(x / y) };
  for (const [sa, sb] of [[[7], [7]], [[64, 10], [10]], [[5, 1, 3], [4, 1]], [[1], [2, 3, 4, 5]],
    [[2, 1, 4, 1], [3, 1, 6]], [[9, 6], [9, 1]]]) {
    const a = values(count(sa), 10);
    const b = values(count(sb), 10);
    const out = sa.length >= sb.length ? [...sa] : [...sb];
    const rank = out.length;
    for (let i = 1; i <= rank; i++) {
      out[rank - i] = Math.max(sa[sa.length - i] ?? 1, sb[sb.length - i] ?? 1);
    }
    const index = (shape, coords) => shape.reduce((acc, d, i) => acc * d +
      (d === 1 ? 0 : coords[rank - shape.length + i]), 0);
    for (const [op, fn] of Object.entries(ops)) {
      const want = [];
      for (let flat = 0; flat < count(out); flat++) {
        const coords = [];
        let r = flat;
        for (let i = rank - 1; i >= 0; i--) { coords[i] = r % out[i]; r = Math.floor(r / out[i]); }
        want.push(fn(a[index(sa, coords)], b[index(sb, coords)]));
      }
      sameBits(await runOp(be, [[sa, a], [sb, b]], { op, a: 0, b: 1 }), want, `${op} ${sa} ${sb}`);
    }
  }
  be.dispose();
});

/** Game of Life on a torus, straight from the rules. */
function lifeStep(grid, h, w) {
  const alive = (r, c) => grid[((r + h) % h) * w + ((c + w) % w)] > 0.5;
  return Float32Array.from({ length: h * w }, (_, i) => {
    const [r, c] = [Math.floor(i / w), i % w];
    let n = 0;
    for (const dr of [-1, 0, 1]) for (const dc of [-1, 0, 1]) if ((dr || dc) && alive(r + dr, c + dc)) n++;
    return n === 3 || (n === 2 && alive(r, c)) ? 1 : 0;
  });
}

test('life: toroidal step, alive when > 0.5 (a glider across the corner, random grids)', async () => {
  const be = await createBackend();
  const glider = new Float32Array(25);
  for (const [r, c] of [[3, 4], [4, 0], [2, 4], [4, 3], [4, 4]]) glider[r * 5 + c] = 0.9;
  const got = await runOp(be, [[[5, 5], glider]], { op: 'life', a: 0 });
  sameBits(got, lifeStep(glider, 5, 5), 'glider');
  assert.ok(got.some((v, i) => v === 1 && i % 5 === 0) && got.some((v, i) => v === 1 && i % 5 === 4),
    'the glider spans the wrap-around edge');
  for (const [h, w] of [[1, 1], [3, 7], [16, 9]]) {
    const grid = values(h * w);
    sameBits(await runOp(be, [[[h, w], grid]], { op: 'life', a: 0 }), lifeStep(grid, h, w), `${h}x${w}`);
  }
  be.dispose();
});

test('executes reuse freed memory: no growth after the first, nothing live after dispose', async () => {
  const hooks = {};
  const rt = await createRuntime({ backend: 'wasm', hooks });
  const graph = { version: 2, nodes: [
    { id: 0, op: 'input', shape: [300, 300], data: values(90000) },
    { id: 1, op: 'matmul', a: 0, b: 0 }, { id: 2, op: 'relu', a: 1 }, { id: 3, op: 'sum', a: 2 }],
  outputs: [{ name: 's', id: 3 }] };
  const first = await rt.execute(graph);
  const after = hooks.wasmStats();
  for (let i = 0; i < 3; i++) {
    const r = await rt.execute(graph);
    sameBits(r.outputs.s.data, first.outputs.s.data, 'repeatable');
  }
  assert.equal(hooks.wasmStats().grows, after.grows);
  assert.equal(hooks.wasmStats().memoryBytes, after.memoryBytes);
  assert.equal(hooks.wasmStats().liveBlocks, 0);
  rt.dispose();
});

test('intermediates share blocks once dead, outputs never do', async () => {
  const be = await createBackend();
  const nodes = [{ id: 0, op: 'input', shape: [1000], data: values(1000) }];
  for (let i = 1; i <= 6; i++) nodes.push({ id: i, op: 'neg', a: i - 1 });
  const checked = validateGraph({ version: 2, nodes, outputs: [{ name: 'y', id: 6 }, { name: 'z', id: 3 }] });
  const program = await be.prepare(checked, { feeds: [], carry: new Map(), keep: [] });
  const ptrs = [1, 2, 4, 5].map((id) => program.ptr[program.slotOf.get(id)]);
  assert.ok(new Set(ptrs).size < 4, `intermediates 1, 2, 4, 5 reuse blocks: ${ptrs}`);
  const out = [0, 3, 6].map((id) => program.ptr[program.slotOf.get(id)]);
  assert.equal(new Set([...out, ...ptrs]).size, new Set(ptrs).size + 3, 'outputs own their blocks');
  const r = await program.run([new Map()], [6, 3]);
  sameBits(r.get(6), checked.nodes[0].data, 'six negations');
  sameBits(r.get(3), Array.from(checked.nodes[0].data, (x) => -x), 'three negations');
  program.dispose();
  be.dispose();
});

test('engines without SIMD128 are refused with UNAVAILABLE naming simd128', async () => {
  await assert.rejects(createBackend({ hooks: { simdSupported: () => false } }),
    (err) => err instanceof GpuLabError && err.code === 'UNAVAILABLE' && /simd128/.test(err.message));
  const rt = createRuntime({ backend: 'wasm', hooks: { simdSupported: () => false } });
  await assert.rejects(rt, (err) => err.code === 'UNAVAILABLE' && /simd128/.test(err.message));
});

test('a disposed program or backend refuses with DISPOSED', async () => {
  const be = await createBackend();
  const checked = validateGraph({ version: 1, nodes: [{ id: 0, op: 'input', shape: [2], data: [1, 2] },
    { id: 1, op: 'relu', a: 0 }], outputs: [{ name: 'y', id: 1 }] });
  const program = await be.prepare(checked, { feeds: [], carry: new Map(), keep: [] });
  program.dispose();
  await assert.rejects(program.run([new Map()], [1]), (err) => err.code === 'DISPOSED');
  be.dispose();
  await assert.rejects(be.prepare(checked, {}), (err) => err.code === 'DISPOSED');
});

/** Distance in float32 ulps between two float32 values (0 for equal, Infinity across NaN). */
function ulps(got, want) {
  if (Number.isNaN(got) || Number.isNaN(want)) return Number.isNaN(got) && Number.isNaN(want) ? 0 : Infinity;
  if (got === want) return 0;
  const key = (x) => {
    const u = new Uint32Array(new Float32Array([x]).buffer)[0];
    return u & 0x80000000 ? -(u & 0x7fffffff) : u;
  };
  return Math.abs(key(got) - key(want));
}

test('exp, log, tanh, sigmoid, sqrt are within 1 float32 ulp of float64 math on a dense sweep', async () => {
  const be = await createBackend();
  const sweep = [0, -0, NaN, Infinity, -Infinity, 1e-45, -1e-45, 1e-38, 3.4e38, -3.4e38];
  for (let e = -40; e <= 38; e += 0.25) sweep.push(10 ** e, -(10 ** e));
  for (let x = -104; x <= 104; x += 0.037) sweep.push(x);
  const a = Float32Array.from(sweep);
  const refs = { exp: Math.exp, log: Math.log, tanh: Math.tanh, sqrt: Math.sqrt,
    sigmoid: (x) => 1 / (1 + Math.exp(-x)) };
  for (const [op, ref] of Object.entries(refs)) {
    const got = await runOp(be, [[[a.length], a]], { op, a: 0 });
    let worst = 0;
    let at = 0;
    got.forEach((g, i) => {
      const u = ulps(g, f(ref(a[i])));
      if (u > worst) [worst, at] = [u, a[i]];
    });
    assert.ok(worst <= (op === 'sqrt' ? 0 : 1), `${op}: ${worst} ulps at x = ${at}`);
  }
  be.dispose();
});

test('a missing kernels.wasm is UNAVAILABLE with its URL; a module without the ABI is BACKEND', async () => {
  const missing = new URL('file:///nonexistent/kernels.wasm');
  await assert.rejects(createBackend({ hooks: { kernelsUrl: missing } }),
    (err) => err.code === 'UNAVAILABLE' && err.message.includes(missing.href));
  // the SIMD probe itself is a valid module, but it exports no abi_version
  const probe = new URL('data:application/wasm;base64,AGFzbQEAAAABBQFgAAF7AwIBAAoIAQYAQQD9Dws=');
  await assert.rejects(createBackend({ hooks: { kernelsUrl: probe } }),
    (err) => err.code === 'BACKEND' && /ABI -1/.test(err.message));
});

/** out[i] = a[dims[i]] by index arithmetic, any rank. */
function permuteRef(a, shape, dims) {
  const outShape = dims.map((d) => shape[d]);
  const inStrides = shape.map((_, i) => count(shape.slice(i + 1)));
  return Float32Array.from({ length: a.length }, (_, flat) => {
    let rem = flat;
    let src = 0;
    for (let i = outShape.length - 1; i >= 0; i--) {
      src += (rem % outShape[i]) * inStrides[dims[i]];
      rem = Math.floor(rem / outShape[i]);
    }
    return a[src];
  });
}

test('permute and transpose of large planes (the tiled path) move every element exactly', async () => {
  const be = await createBackend();
  for (const [shape, dims] of [[[37, 50], [1, 0]], [[2, 20, 33], [0, 2, 1]], [[17, 3, 18], [1, 2, 0]],
    [[3, 16, 2, 16], [1, 3, 0, 2]], [[40, 40], [0, 1]]]) {
    const a = values(count(shape));
    sameBits(await runOp(be, [[shape, a]], { op: 'permute', a: 0, dims }), permuteRef(a, shape, dims),
      `permute ${shape} by ${dims}`);
    const rank = shape.length;
    const swap = [...Array(rank).keys()];
    [swap[rank - 2], swap[rank - 1]] = [swap[rank - 1], swap[rank - 2]];
    sameBits(await runOp(be, [[shape, a]], { op: 'transpose', a: 0 }), permuteRef(a, shape, swap),
      `transpose ${shape}`);
  }
  be.dispose();
});
