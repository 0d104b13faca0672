// Every graph of pylib/gpulab/conformance/bad_graphs.json is refused by validateGraph with the table's
// code, naming the table's node (the Python twin: e2e/test_bad_graphs.py).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { validateGraph } from '../src/validate.mjs';
import { GpuLabError } from '../src/errors.mjs';

const rows = JSON.parse(readFileSync(new URL('../../pylib/gpulab/conformance/bad_graphs.json',
  import.meta.url), 'utf8'));

test('the bad-graph table is large and varied', () => {
  const codes = new Set(rows.map((r) => r.code));
  for (const code of ['VALIDATION', 'LIMIT', 'UNSUPPORTED_VERSION']) assert.ok(codes.has(code));
  assert.ok(rows.length >= 80);
});

for (const row of rows) {
  test(`refuses ${row.name}`, () => {
    assert.throws(() => validateGraph(row.graph), (err) => {
      const what = `${row.name}: got ${err.code} node=${err.node} ${JSON.stringify(err.message)}`;
      assert.ok(err instanceof GpuLabError, what);
      assert.equal(err.code, row.code, what);
      assert.equal(err.node, row.node, what);
      if (row.node !== null) assert.ok(err.message.includes(`node ${row.node} (`), what);
      if (row.says) assert.ok(err.message.toLowerCase().includes(row.says), what);
      return true;
    });
  });
}
