// Dtypes in the validator: data of every dtype in every accepted form, the generic result-dtype
// rule, base64 both ways (the Python twin: pylib/tests/test_dtypes.py).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateGraph } from '../src/validate.mjs';
import {
  TYPED_ARRAY, decodeBase64, encodeBase64, resultDtype, toBase64Data,
} from '../src/dtypes.mjs';

/** @param {string} dtype @param {unknown} data @param {number[]} [shape] */
function checkedData(dtype, data, shape = [3]) {
  const g = { version: 3, nodes: [{ id: 0, op: 'input', shape, dtype, data }],
    outputs: [{ name: 'x', id: 0 }] };
  const node = validateGraph(g).nodes[0];
  assert.equal(node.dtype, dtype);
  return node.data;
}

const SAMPLES = {
  float32: [1.5, -2, 3e-3],
  int32: [-2147483648, 0, 2147483647],
  uint32: [0, 7, 4294967295],
  bool: [1, 0, 1],
};

test('plain lists, typed arrays, ArrayBuffers and base64 give the same typed data', () => {
  for (const [dtype, values] of Object.entries(SAMPLES)) {
    const Ctor = TYPED_ARRAY[dtype];
    const want = Ctor.from(values);
    const typed = Ctor.from(values);
    assert.equal(checkedData(dtype, typed), typed, `${dtype}: a typed array of the dtype is kept`);
    assert.deepEqual(checkedData(dtype, values), want, dtype);
    assert.deepEqual(checkedData(dtype, want.slice().buffer), want, dtype);
    assert.deepEqual(checkedData(dtype, toBase64Data(want)), want, dtype);
    assert.ok(checkedData(dtype, values) instanceof Ctor, dtype);
  }
  assert.deepEqual(checkedData('bool', [true, false, true]), Uint8Array.of(1, 0, 1));
  assert.deepEqual(checkedData('int32', Float64Array.of(1, -2, 3)), Int32Array.of(1, -2, 3));
  assert.deepEqual(checkedData('int32', [1.0, 2, 3]), Int32Array.of(1, 2, 3));
});

test('bad values of a typed array are refused with the element named', () => {
  const refuse = (dtype, data, re) => assert.throws(() => checkedData(dtype, data),
    (e) => e.code === 'VALIDATION' && e.node === 0 && re.test(e.message));
  refuse('int32', Float32Array.of(1, 2.5, 3), /data\[1\] = 2.5 is not an int32/);
  refuse('uint32', Int32Array.of(1, -1, 3), /data\[1\] = -1 is not a uint32/);
  refuse('bool', Uint8Array.of(1, 0, 2), /data\[2\] = 2 is not a bool/);
  refuse('int32', Float64Array.of(NaN, 1, 2), /data\[0\] = NaN is not an int32/);
  refuse('int32', new ArrayBuffer(8), /data buffer holds 8 bytes, shape \[3\] of int32 needs 12/);
  refuse('bool', { base64: 'AAEC' }, /data\[2\] = 2 is not a bool/);
  refuse('int32', BigInt64Array.of(1n, 2n, 3n), /must hold numbers/);
});

test('base64 is strict and round-trips every byte', () => {
  const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(decodeBase64(encodeBase64(bytes)), bytes);
  assert.equal(encodeBase64(Uint8Array.of(1, 0, 0, 0)), 'AQAAAA==');
  for (const bad of ['AQAAAA', 'AQ=AAA==', 'AQAA AA=', 'AQAAA===', 'AQ-_AA==']) {
    assert.equal(decodeBase64(bad), null, bad);
  }
  assert.deepEqual(decodeBase64(''), new Uint8Array(0));
});

test('the result dtype rule: allowed dtypes, one dtype per type variable, literal results', () => {
  const node = { id: 5, op: 'argmax', attrs: {} };
  const spec = { operands: ['a', 'b'], types: { T: ['float32', 'int32'] },
    operand_types: { a: 'T', b: 'T' }, result_type: 'int32' };
  assert.equal(resultDtype(node, spec, ['float32', 'float32']), 'int32');
  assert.equal(resultDtype(node, { ...spec, result_type: 'T' }, ['int32', 'int32']), 'int32');
  assert.throws(() => resultDtype(node, spec, ['bool', 'bool']),
    { code: 'VALIDATION', node: 5, message: 'node 5 (argmax): operand a must be float32 or int32, got bool' });
  assert.throws(() => resultDtype(node, spec, ['float32', 'int32']),
    { code: 'VALIDATION', message: 'node 5 (argmax): operand b must be float32 like operand a, got int32' });
  const literal = { ...spec, operand_types: { a: 'T', b: 'uint32' } };
  assert.throws(() => resultDtype(node, literal, ['int32', 'int32']),
    { message: 'node 5 (argmax): operand b must be uint32, got int32' });
});

test('every checked node carries its dtype; non-float32 needs version 3', () => {
  const g = { version: 3, nodes: [
    { id: 0, op: 'input', shape: [2], dtype: 'uint32', data: [1, 2] },
    { id: 1, op: 'full', shape: [2], value: 1 },
    { id: 2, op: 'exp', a: 1 },
  ], outputs: [{ name: 'u', id: 0 }, { name: 'e', id: 2 }] };
  const checked = validateGraph(g);
  assert.deepEqual(checked.nodes.map((n) => n.dtype), ['uint32', 'float32', 'float32']);
  assert.equal(checked.requiredVersion, 3);
  assert.equal(validateGraph({ ...g, nodes: g.nodes.slice(1),
    outputs: [{ name: 'e', id: 2 }] }).requiredVersion, 2);
});
