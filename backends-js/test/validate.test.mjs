// The validator: every error code, the documented check order, messages naming the node, the
// checked graph's fields (order, normalized attrs, required version).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateGraph } from '../src/validate.mjs';
import { GpuLabError } from '../src/errors.mjs';
import { LIMITS } from '../src/optable.mjs';

const SEED = () => ({
  version: 1,
  nodes: [
    { id: 0, op: 'input', shape: [3], data: [-2, 3, 4] },
    { id: 1, op: 'input', shape: [3], data: [10, 20, 30] },
    { id: 2, op: 'mul', a: 0, b: 1 },
    { id: 3, op: 'relu', a: 2 },
  ],
  outputs: [{ name: 'values', id: 3 }],
});

/** A graph with the given nodes and one output (the last node unless said). */
const graph = (nodes, { version = 2, out = nodes[nodes.length - 1].id } = {}) =>
  ({ version, nodes, outputs: [{ name: 'out', id: out }] });

const inp = (id, shape, data) => ({ id, op: 'input', shape, ...(data ? { data } : {}) });
const ones = (shape) => new Array(shape.reduce((p, d) => p * d, 1)).fill(1);

/**
 * Assert validateGraph refuses with `code`, a message matching `pattern` and the node id.
 * @param {unknown} g @param {string} code @param {RegExp} pattern @param {number|null} [node]
 */
function refuses(g, code, pattern, node) {
  assert.throws(() => validateGraph(g), (err) => {
    assert.ok(err instanceof GpuLabError, `not a GpuLabError: ${err}`);
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    if (node !== undefined) assert.equal(err.node, node);
    return true;
  });
}

test('the seed graph validates into the checked format', () => {
  const checked = validateGraph(SEED());
  assert.equal(checked.version, 1);
  assert.equal(checked.requiredVersion, 1);
  assert.deepEqual(checked.order, [0, 1, 2, 3]);
  assert.deepEqual(checked.outputs, [{ name: 'values', id: 3 }]);
  assert.ok(checked.byId instanceof Map);
  assert.equal(checked.byId.get(2).op, 'mul');
  assert.deepEqual(checked.byId.get(2).operands, [0, 1]);
  assert.deepEqual(checked.byId.get(3).shape, [3]);
  assert.ok(checked.nodes[0].data instanceof Float32Array);
  assert.deepEqual([...checked.nodes[0].data], [-2, 3, 4]);
  assert.deepEqual(checked.nodes[0].attrs, { shape: [3], dtype: 'float32' });
});

test('top level: VALIDATION for a malformed graph, UNSUPPORTED_VERSION, LIMIT', () => {
  refuses(null, 'VALIDATION', /graph must be an object/, null);
  refuses([], 'VALIDATION', /graph must be an object/);
  refuses({ version: 1, nodes: [] }, 'VALIDATION', /missing "outputs"/);
  refuses({ ...SEED(), version: '1' }, 'VALIDATION', /version must be an integer/);
  refuses({ ...SEED(), version: true }, 'VALIDATION', /version must be an integer/);
  refuses({ ...SEED(), version: 9 }, 'UNSUPPORTED_VERSION', /version 9 is not known/);
  refuses({ ...SEED(), version: 9, nodes: [] }, 'UNSUPPORTED_VERSION', /version 9/);
  refuses({ ...SEED(), nodes: [] }, 'VALIDATION', /nodes must be a non-empty list/);
  refuses({ ...SEED(), outputs: {} }, 'VALIDATION', /outputs must be a non-empty list/);
  const many = Array.from({ length: LIMITS.max_nodes + 1 }, (_, i) => inp(i, [1], [0]));
  refuses({ version: 1, nodes: many, outputs: [{ name: 'x', id: 0 }] }, 'LIMIT', /max_nodes/);
  const outs = Array.from({ length: LIMITS.max_outputs + 1 }, (_, i) => ({ name: `o${i}`, id: 0 }));
  refuses({ version: 1, nodes: [inp(0, [1], [0])], outputs: outs }, 'LIMIT', /max_outputs/);
});

test('nodes: ids, ops, operands, unknown fields, each naming the node', () => {
  refuses(graph([7]), 'VALIDATION', /nodes\[0\] must be an object/, null);
  refuses(graph([{ op: 'input', shape: [1], data: [1] }]), 'VALIDATION', /nodes\[0\] has no id/);
  refuses(graph([inp(-1, [1], [1])]), 'VALIDATION', /id must be an integer >= 0/);
  refuses(graph([inp(1.5, [1], [1])]), 'VALIDATION', /id must be an integer >= 0/);
  refuses(graph([inp(0, [1], [1]), { id: 0, op: 'relu', a: 0 }]), 'VALIDATION',
    /^node 0 \(relu\): duplicate id 0/, 0);
  refuses(graph([inp(0, [1], [1]), { id: 4, op: 'frobnicate', a: 0 }]), 'VALIDATION',
    /^node 4 \(frobnicate\): unknown op "frobnicate"/, 4);
  refuses(graph([inp(0, [1], [1]), { id: 1, op: 'add', a: 0 }]), 'VALIDATION',
    /^node 1 \(add\): missing operand b/, 1);
  refuses(graph([inp(0, [1], [1]), { id: 1, op: 'add', a: 0, b: '0' }]), 'VALIDATION',
    /^node 1 \(add\): operand b must be an integer/, 1);
  refuses(graph([inp(0, [1], [1]), { id: 1, op: 'relu', a: 0, b: 0 }]), 'VALIDATION',
    /^node 1 \(relu\): unknown field "b"/, 1);
  refuses(graph([inp(0, [1], [1]), { id: 1, op: 'relu', a: 0, axis: 0 }]), 'VALIDATION',
    /unknown field "axis"/, 1);
});

test('attributes are type-checked', () => {
  const cases = [
    [{ id: 0, op: 'input' }, 'VALIDATION', /missing attribute "shape"/],
    [inp(0, 3, [1]), 'VALIDATION', /shape must be a list of integers/],
    [inp(0, [2, -1], [1]), 'VALIDATION', /not an integer >= 0: -1/],
    [inp(0, [2, 0], [1]), 'VALIDATION', /data has 1 values, shape \[2, 0\] needs 0/],
    [inp(0, [true], [1]), 'VALIDATION', /not an integer >= 0: true/],
    [inp(0, [2.5], [1]), 'VALIDATION', /not an integer >= 0/],
    [inp(0, new Array(9).fill(1), [1]), 'LIMIT', /rank 9, more than max_rank 8/],
    [inp(0, [65536, 1025]), 'LIMIT', /more than max_elements/],
    [inp(0, [3], [1, 2]), 'VALIDATION', /data has 2 values, shape \[3\] needs 3/],
    [inp(0, [2], [1, 'x']), 'VALIDATION', /data\[1\] must be a number/],
    [inp(0, [2], [1, null]), 'VALIDATION', /data\[1\] must be a number/],
    [inp(0, [1], 'abc'), 'VALIDATION', /data must be a list of numbers/],
    [{ ...inp(0, [1], [1]), data: null }, 'VALIDATION', /data must be a list of numbers/],
    [{ ...inp(0, [1], [1]), dtype: 'float64' }, 'VALIDATION', /dtype must be one of float32, int32, uint32, bool/],
    [{ id: 0, op: 'full', shape: [2] }, 'VALIDATION', /missing attribute "value"/],
    [{ id: 0, op: 'full', shape: [2], value: 'NaN' }, 'VALIDATION', /value must be a number/],
    [{ id: 0, op: 'full', shape: [2], value: [1] }, 'VALIDATION', /value must be a number/],
  ];
  for (const [node, code, pattern] of cases) refuses(graph([node]), code, pattern, 0);
  const base = inp(0, [2, 3], ones([2, 3]));
  const attrCases = [
    [{ id: 1, op: 'sum', a: 0, axis: 1.5 }, /axis must be an integer or null/],
    [{ id: 1, op: 'sum', a: 0, axis: '0' }, /axis must be an integer or null/],
    [{ id: 1, op: 'sum', a: 0, keepdim: 1 }, /keepdim must be a boolean/],
    [{ id: 1, op: 'sgd_update', a: 0, b: 0 }, /missing attribute "lr"/],
    [{ id: 1, op: 'sgd_update', a: 0, b: 0, lr: Infinity }, /lr must be a finite float32 number/],
    [{ id: 1, op: 'sgd_update', a: 0, b: 0, lr: 'inf' }, /lr must be a finite float32 number/],
    [{ id: 1, op: 'adam_m', a: 0, b: 0, beta1: true }, /beta1 must be a finite float32 number/],
    [{ id: 1, op: 'sgd_update', a: 0, b: 0, lr: 1e39 }, /lr must be a finite float32 number/],
    [{ id: 1, op: 'permute', a: 0, dims: [0, 'x'] }, /dims must be a list of integers/],
    [{ id: 1, op: 'reshape', a: 0, shape: [-1, -1] }, /more than one -1/],
    [{ id: 1, op: 'reshape', a: 0, shape: [-2, 6] }, /integers >= 0 or -1/],
    [{ id: 1, op: 'reshape', a: 0, shape: [0, 6] }, /\(0 elements\)/],
  ];
  for (const [node, pattern] of attrCases) refuses(graph([base, node]), 'VALIDATION', pattern, 1);
  refuses(graph([base, { id: 1, op: 'reshape', a: 0, shape: [1, 1, 1, 1, 1, 1, 1, 2, 3] }]),
    'LIMIT', /max_rank/, 1);
});

test('data: typed arrays, buffers and non-finite strings become Float32Array', () => {
  const f32 = new Float32Array([1, 2]);
  const g = graph([
    inp(0, [2], f32),
    inp(1, [2], new Float64Array([0.1, -3])),
    inp(2, [2], new Float32Array([5, 6]).buffer),
    inp(3, [3], ['nan', 'inf', '-inf']),
    inp(4, [2], new Int16Array([7, -8])),
    { id: 5, op: 'full', shape: [1], value: '-inf' },
  ], { out: 0 });
  const checked = validateGraph(g);
  assert.equal(checked.byId.get(0).data, f32, 'a Float32Array is kept without copying');
  assert.deepEqual([...checked.byId.get(1).data], [Math.fround(0.1), -3]);
  assert.deepEqual([...checked.byId.get(2).data], [5, 6]);
  assert.deepEqual([...checked.byId.get(3).data], [NaN, Infinity, -Infinity]);
  assert.deepEqual([...checked.byId.get(4).data], [7, -8]);
  assert.equal(checked.byId.get(5).attrs.value, -Infinity);
  refuses(graph([inp(0, [2], new BigInt64Array(2))]), 'VALIDATION', /must hold numbers/, 0);
  refuses(graph([inp(0, [2], new ArrayBuffer(6))]), 'VALIDATION', /6 bytes/, 0);
});

test('structure: dangling operand names the node that refers to it; outputs; cycles', () => {
  refuses(graph([inp(0, [1], [1]), { id: 1, op: 'add', a: 0, b: 9 }]), 'VALIDATION',
    /^node 1 \(add\): dangling operand b = 9/, 1);
  const ok = [inp(0, [1], [1])];
  refuses({ version: 1, nodes: ok, outputs: [{ name: 'x', id: 5 }] }, 'VALIDATION',
    /dangling output "x": no node has id 5/);
  refuses({ version: 1, nodes: ok, outputs: [{ name: 'x', id: 0 }, { name: 'x', id: 0 }] },
    'VALIDATION', /duplicate output name "x"/);
  refuses({ version: 1, nodes: ok, outputs: [{ name: '', id: 0 }] }, 'VALIDATION',
    /name must be a non-empty string/);
  refuses({ version: 1, nodes: ok, outputs: [{ name: 'x', id: 0, shape: [1] }] }, 'VALIDATION',
    /unknown field "shape"/);
  refuses({ version: 1, nodes: ok, outputs: ['x'] }, 'VALIDATION', /outputs\[0\] must be an object/);
  // 5 depends on the cycle 1 <-> 2 but is not on it: the first node on a cycle is named.
  refuses(graph([inp(0, [1], [1]), { id: 5, op: 'relu', a: 2 }, { id: 1, op: 'add', a: 0, b: 2 },
    { id: 2, op: 'relu', a: 1 }], { out: 0 }), 'VALIDATION', /^node 1 \(add\): is on a cycle/, 1);
  refuses(graph([{ id: 0, op: 'relu', a: 0 }]), 'VALIDATION', /^node 0 \(relu\): is on a cycle/, 0);
});

test('shapes: mismatches name the node and the operand shapes', () => {
  const a = inp(0, [2, 3], ones([2, 3]));
  const b = inp(1, [4], ones([4]));
  refuses(graph([a, b, { id: 2, op: 'add', a: 0, b: 1 }]), 'VALIDATION',
    /^node 2 \(add\): operand shapes do not broadcast: a \[2, 3\], b \[4\]/, 2);
  refuses(graph([a, b, { id: 2, op: 'matmul', a: 0, b: 0 }]), 'VALIDATION',
    /^node 2 \(matmul\): inner dimensions differ: a \[2, 3\], b \[2, 3\]/, 2);
  refuses(graph([b, { id: 2, op: 'matmul', a: 1, b: 1 }]), 'VALIDATION', /rank >= 2/, 2);
  refuses(graph([a, { id: 2, op: 'sum', a: 0, axis: 2 }]), 'VALIDATION',
    /axis 2 is out of range for a \[2, 3\]/, 2);
  refuses(graph([a, { id: 2, op: 'softmax', a: 0, axis: -3 }]), 'VALIDATION', /out of range/, 2);
  refuses(graph([a, { id: 2, op: 'permute', a: 0, dims: [0, 0] }]), 'VALIDATION',
    /not a permutation/, 2);
  refuses(graph([a, { id: 2, op: 'reshape', a: 0, shape: [4, -1] }]), 'VALIDATION',
    /cannot reshape a \[2, 3\]/, 2);
  refuses(graph([a, b, { id: 2, op: 'cross_entropy', a: 0, b: 1 }]), 'VALIDATION',
    /must be equal/, 2);
  refuses(graph([b, { id: 2, op: 'life', a: 1 }]), 'VALIDATION', /rank-2 grid/, 2);
  refuses(graph([a, inp(1, [2], [1, 1]), { id: 2, op: 'adam_update', a: 0, b: 0, c: 0, t: 1 }]),
    'VALIDATION', /operand t must hold one element/, 2);
});

test('shapes: per-result and total element limits', () => {
  const big = (id, shape) => ({ id, op: 'full', shape, value: 0 });
  refuses(graph([big(0, [8192, 1]), big(1, [1, 16384]), { id: 2, op: 'add', a: 0, b: 1 }]),
    'LIMIT', /^node 2 \(add\): result \[8192, 16384\] has 134217728 elements/, 2);
  const nodes = [0, 1, 2, 3, 4].map((i) => big(i, [LIMITS.max_elements]));
  refuses(graph(nodes), 'LIMIT', /^node 4 \(full\): .*max_total_elements/, 4);
});

test('nodes no output depends on are validated but do not run', () => {
  const g = graph([inp(0, [2], [1, 2]), inp(1, [3], [1, 2, 3]), { id: 2, op: 'add', a: 0, b: 1 },
    { id: 3, op: 'relu', a: 0 }]);
  refuses(g, 'VALIDATION', /^node 2 \(add\)/, 2);
  const ok = graph([inp(0, [2], [1, 2]), { id: 1, op: 'neg', a: 0 }, { id: 2, op: 'relu', a: 0 }]);
  const checked = validateGraph(ok);
  assert.deepEqual(checked.order, [0, 2]);
  assert.deepEqual(checked.byId.get(1).shape, [2], 'dead nodes still get shapes');
});

test('execution order: topological, ties by list position, nodes listed in any order', () => {
  const g = {
    version: 1,
    nodes: [
      { id: 10, op: 'add', a: 3, b: 7 },
      { id: 7, op: 'relu', a: 5 },
      { id: 3, op: 'input', shape: [2], data: [1, 2] },
      { id: 5, op: 'input', shape: [2], data: [3, 4] },
      { id: 6, op: 'relu', a: 3 },
    ],
    outputs: [{ name: 'x', id: 10 }, { name: 'y', id: 6 }],
  };
  // Ready first: 3 (position 2) and 5 (3) -> 3; then 5 and 6 ready: 5 (3) before 6 (4); then
  // 7 (1) before 6 (4); then 10 (0) before 6.
  assert.deepEqual(validateGraph(g).order, [3, 5, 7, 10, 6]);
});

test('versions: v2 ops and v2 features in a v1 graph are refused naming the first node', () => {
  const a = inp(0, [2, 3], ones([2, 3]));
  refuses(graph([a, { id: 1, op: 'softmax', a: 0 }], { version: 1 }), 'UNSUPPORTED_VERSION',
    /^node 1 \(softmax\): needs version 2 \(softmax is a version 2 op\)/, 1);
  refuses(graph([a, inp(1, [3], [1, 2, 3]), { id: 2, op: 'relu', a: 0 },
    { id: 3, op: 'add', a: 0, b: 1 }], { version: 1 }), 'UNSUPPORTED_VERSION',
  /^node 3 \(add\): .*broadcast/, 3);
  refuses(graph([a, { id: 1, op: 'sum', a: 0, axis: 0 }], { version: 1 }),
    'UNSUPPORTED_VERSION', /use of axis/, 1);
  refuses(graph([a, { id: 1, op: 'sum', a: 0, keepdim: true }], { version: 1 }),
    'UNSUPPORTED_VERSION', /use of axis/, 1);
  const batched = inp(0, [2, 2, 2], ones([2, 2, 2]));
  refuses(graph([batched, { id: 1, op: 'matmul', a: 0, b: 0 }], { version: 1 }),
    'UNSUPPORTED_VERSION', /batched/, 1);
  refuses(graph([batched, { id: 1, op: 'transpose', a: 0 }], { version: 1 }),
    'UNSUPPORTED_VERSION', /batched/, 1);
  // The first node in list order that needs more is named, even when it runs later.
  refuses(graph([a, { id: 2, op: 'exp', a: 1 }, { id: 1, op: 'log', a: 0 }], { version: 1 }),
    'UNSUPPORTED_VERSION', /^node 2 \(exp\)/, 2);
});

test('versions: scalar broadcasting stays version 1; required version is computed', () => {
  const a = inp(0, [2, 3], ones([2, 3]));
  for (const scalar of [inp(1, [1], [2]), inp(1, [], [2])]) {
    const checked = validateGraph(graph([a, scalar, { id: 2, op: 'mul', a: 1, b: 0 }],
      { version: 1 }));
    assert.equal(checked.requiredVersion, 1);
  }
  const rank2one = graph([a, inp(1, [1, 1], [2]), { id: 2, op: 'mul', a: 0, b: 1 }]);
  assert.equal(validateGraph(rank2one).requiredVersion, 2);
  const seedAsV2 = { ...SEED(), version: 2 };
  const checked = validateGraph(seedAsV2);
  assert.equal(checked.version, 2);
  assert.equal(checked.requiredVersion, 1, 'a graph may declare more than it needs');
  assert.equal(validateGraph(graph([a, { id: 1, op: 'sum', a: 0 }], { version: 1 }))
    .requiredVersion, 1);
});

test('attributes are normalized and defaults filled', () => {
  const a = inp(0, [2, 3, 4], ones([2, 3, 4]));
  const checked = validateGraph(graph([a,
    { id: 1, op: 'sum', a: 0, axis: -2, keepdim: true },
    { id: 2, op: 'softmax', a: 0 },
    { id: 3, op: 'log_softmax', a: 0, axis: null },
    { id: 4, op: 'reshape', a: 0, shape: [-1, 4] },
    { id: 5, op: 'mean', a: 0 },
    { id: 6, op: 'adam_update', a: 0, b: 0, c: 0, t: 7 },
    { id: 7, op: 'full', shape: [], value: 1 },
    { id: 8, op: 'adam_m', a: 0, b: 0 },
  ], { out: 1 }));
  assert.deepEqual(checked.byId.get(1).attrs, { axis: 1, keepdim: true });
  assert.deepEqual(checked.byId.get(1).shape, [2, 1, 4]);
  assert.deepEqual(checked.byId.get(2).attrs, { axis: 2 });
  assert.deepEqual(checked.byId.get(3).attrs, { axis: 2 });
  assert.deepEqual(checked.byId.get(4).attrs, { shape: [6, 4] });
  assert.deepEqual(checked.byId.get(4).shape, [6, 4]);
  assert.deepEqual(checked.byId.get(5).attrs, { axis: null, keepdim: false });
  assert.deepEqual(checked.byId.get(5).shape, []);
  assert.deepEqual(checked.byId.get(6).attrs, { lr: Math.fround(0.001), beta1: Math.fround(0.9), beta2: Math.fround(0.999), eps: Math.fround(1e-8) });
  assert.deepEqual(checked.byId.get(8).attrs, { beta1: Math.fround(0.9) });
});

test('checks run in the documented order: the earlier step wins', () => {
  // A bad attribute (step 2) is reported before a dangling operand (step 3) listed earlier.
  refuses(graph([{ id: 1, op: 'add', a: 0, b: 9 }, inp(0, [-1], [])], { out: 0 }), 'VALIDATION',
    /^node 0 \(input\): shape/, 0);
  // A shape error (step 4) is reported before a version error (step 5) listed earlier.
  refuses(graph([inp(0, [2], [1, 1]), { id: 1, op: 'exp', a: 0 }, inp(2, [3], [1, 1, 1]),
    { id: 3, op: 'div', a: 0, b: 2 }], { version: 1 }), 'VALIDATION', /^node 3 \(div\)/, 3);
  // Within a node: id before op, op before operands, operands before unknown fields.
  refuses(graph([{ id: -1, op: 'nope' }]), 'VALIDATION', /id must be/);
  refuses(graph([{ id: 0, op: 'nope', zzz: 1 }]), 'VALIDATION', /unknown op/);
  refuses(graph([{ id: 0, op: 'relu', zzz: 1 }]), 'VALIDATION', /missing operand a/);
});

test('errors serialize to plain data', () => {
  try {
    validateGraph(graph([inp(0, [1], [1]), { id: 1, op: 'add', a: 0, b: 9 }]));
    assert.fail('should refuse');
  } catch (err) {
    assert.deepEqual(JSON.parse(JSON.stringify(err)), {
      name: 'GpuLabError', code: 'VALIDATION', node: 1, message: err.message,
    });
  }
});

test('random mutations of valid graphs give a GpuLabError with a known code, never a crash', () => {
  const base = [
    SEED(),
    graph([inp(0, [2, 3], ones([2, 3])), inp(1, [3], [1, 2, 3]), { id: 2, op: 'add', a: 0, b: 1 },
      { id: 3, op: 'softmax', a: 2, axis: 0 }, { id: 4, op: 'reshape', a: 3, shape: [-1] },
      { id: 5, op: 'permute', a: 0, dims: [1, 0] }, { id: 6, op: 'matmul', a: 0, b: 5 },
      { id: 7, op: 'adam_update', a: 6, b: 6, c: 6, t: 8 }, { id: 8, op: 'full', shape: [], value: 1 },
      { id: 9, op: 'sum', a: 7, axis: -1, keepdim: true }]),
  ];
  const junk = [null, -1, 0, 1, 2, 99, 1.5, 'x', 'nan', true, [], [1], [0], [-1, 2], {}, NaN, 2 ** 40];
  const codes = new Set(['VALIDATION', 'UNSUPPORTED_VERSION', 'LIMIT']);
  let seed = 12345;
  const rnd = (n) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  let refused = 0;
  for (let trial = 0; trial < 600; trial++) {
    const g = structuredClone(base[rnd(base.length)]);
    for (let k = 0; k <= rnd(3); k++) {
      const where = rnd(3);
      if (where === 0) g[['version', 'nodes', 'outputs'][rnd(3)]] = junk[rnd(junk.length)];
      else if (where === 1 && Array.isArray(g.nodes) && g.nodes.length > 0) {
        const node = g.nodes[rnd(g.nodes.length)];
        if (node && typeof node === 'object') {
          const keys = [...Object.keys(node), 'a', 'b', 'extra'];
          const key = keys[rnd(keys.length)];
          if (rnd(4) === 0) delete node[key];
          else node[key] = junk[rnd(junk.length)];
        }
      } else if (Array.isArray(g.outputs) && g.outputs.length > 0) {
        const out = g.outputs[rnd(g.outputs.length)];
        if (out && typeof out === 'object') out[['name', 'id'][rnd(2)]] = junk[rnd(junk.length)];
      }
    }
    try {
      validateGraph(g);
    } catch (err) {
      assert.ok(err instanceof GpuLabError, `trial ${trial}: ${err}`);
      assert.ok(codes.has(err.code), `trial ${trial}: ${err.code}`);
      assert.ok(err.node === null || Number.isInteger(err.node));
      refused++;
    }
  }
  // not vacuous: both outcomes occur (some mutations stay valid, some are refused)
  assert.ok(refused > 0 && refused < 600, `${refused} of 600 mutations refused`);
});

test('float attributes are normalized to float32 values', () => {
  const checked = validateGraph(graph([inp(0, [2], [1, 2]), { id: 1, op: 'adam_m', a: 0, b: 0, beta1: 0.9 }]));
  assert.equal(checked.byId.get(1).attrs.beta1, Math.fround(0.9));
  assert.notEqual(checked.byId.get(1).attrs.beta1, 0.9);
});
