// The chunk rewrite of students' kernels (student-chunks.mjs): on software adapters a student's
// dispatch runs in submissions of a few workgroups, so its entry point must see the whole
// dispatch's ids. The GPU side runs in e2e/test_student_wgsl.py (same values as unchunked, the
// deadline test); here: the text, where it refuses to rewrite, the uniform's words, the chunk
// rule and compile-error columns mapped back through both rewrites.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CHUNK_TARGET_MS, CHUNK_UNIFORM_BYTES, chunkAxis, chunkSource, chunkWords, nextChunk,
} from '../src/backends/webgpu/student-chunks.mjs';
import { rewriteStudent } from '../src/backends/webgpu/student.mjs';

const HEAD = '@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n';

test('the entry point sees the whole dispatch: workgroup and global ids offset, num_workgroups whole', () => {
  const src = `${HEAD}@compute @workgroup_size(8, 2)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(local_invocation_index) li: u32,
  @builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) n: vec3u) {
  o[id.x] = wg.x + n.x + li;
}
`;
  const c = chunkSource(src, 3);
  assert.ok(c);
  assert.deepEqual(c.workgroupSize, [8, 2, 1]);
  assert.match(c.source, /fn main\(@builtin\(global_invocation_id\) _gpulab_whole_id: vec3u, @builtin\(local_invocation_index\) li: u32,\n  @builtin\(workgroup_id\) _gpulab_whole_wg: vec3<u32>, @builtin\(num_workgroups\) _gpulab_whole_n: vec3u\) \{ let id = _gpulab_whole_id \+ _gpulab_chunk\.inv; let wg = _gpulab_whole_wg \+ _gpulab_chunk\.wg; let n = _gpulab_chunk\.num;\n  o\[id\.x\]/);
  assert.match(c.source, /@group\(0\) @binding\(3\) var<uniform> _gpulab_chunk: _gpulab_Chunk;\n$/);
  // only insertions, none with a newline: the student's lines keep their numbers
  assert.equal(c.source.split('\n').slice(0, 6).join('\n').replace(/_gpulab_whole_| let [^;]*;/g, ''),
    src.split('\n').slice(0, 6).join('\n'));
  assert.ok(c.insertions.every((i) => !i.text.includes('\n')));
});

test('an entry point without the offset builtins is still chunked, its text unchanged but the uniform', () => {
  const src = `${HEAD}@compute @workgroup_size(1) fn main(@builtin(local_invocation_id) l: vec3u) { o[l.x] = 1u; }\n`;
  const c = chunkSource(src, 1);
  assert.ok(c);
  assert.ok(c.source.startsWith(src));
  assert.deepEqual(c.insertions, []);
  assert.deepEqual(chunkSource(`${HEAD}@compute @workgroup_size(4)\nfn main() { o[0] = 1u; }\n`, 1)?.workgroupSize,
    [4, 1, 1]);
});

test('where the rewrite cannot be sure, the kernel is not chunked', () => {
  const struct = `${HEAD}struct In { @builtin(global_invocation_id) id: vec3u }
@compute @workgroup_size(64) fn main(input: In) { o[input.id.x] = 1u; }\n`;
  assert.equal(chunkSource(struct, 1), null);
  const override = `${HEAD}override W: u32 = 64u;
@compute @workgroup_size(W) fn main(@builtin(global_invocation_id) id: vec3u) { o[id.x] = 1u; }\n`;
  assert.equal(chunkSource(override, 1), null);
  const expr = `${HEAD}@compute @workgroup_size(8 * 8) fn main(@builtin(global_invocation_id) id: vec3u) { o[id.x] = 1u; }\n`;
  assert.equal(chunkSource(expr, 1), null);
  assert.equal(chunkSource(`${HEAD}@compute @workgroup_size(1) fn other() {}\n`, 1), null);
  // a commented-out entry point is not the entry point
  const commented = `${HEAD}// fn main(@builtin(workgroup_id) w: vec3u) {}
@compute @workgroup_size(0x10u, 2i) fn main(@builtin(workgroup_id) w: vec3u) { o[w.x] = 1u; }\n`;
  assert.deepEqual(chunkSource(commented, 1)?.workgroupSize, [16, 2, 1]);
  assert.match(/** @type {any} */ (chunkSource(commented, 1)).source, /fn main\(@builtin\(workgroup_id\) _gpulab_whole_w: vec3u\) \{ let w = /);
});

test("the chunk uniform's words: offsets along the split axis, the whole dispatch", () => {
  assert.equal(CHUNK_UNIFORM_BYTES, 48);
  assert.deepEqual([...chunkWords([100, 3, 1], [64, 1, 1], 0, 12)],
    [12, 0, 0, 0, 768, 0, 0, 0, 100, 3, 1, 0]);
  assert.deepEqual([...chunkWords([1, 7, 2], [4, 2, 1], 1, 5)],
    [0, 5, 0, 0, 0, 10, 0, 0, 1, 7, 2, 0]);
  assert.equal(chunkAxis([4096]), 0);
  assert.equal(chunkAxis([1, 9, 3]), 1);
  assert.equal(chunkAxis([1, 1, 3]), 2);
  assert.equal(chunkAxis([1, 1, 1]), 2);
});

test('the chunk size doubles while well under the target, halves over it', () => {
  assert.equal(nextChunk(1, 1), 2);
  assert.equal(nextChunk(8, CHUNK_TARGET_MS / 2 - 1), 16);
  assert.equal(nextChunk(8, CHUNK_TARGET_MS), 8);
  assert.equal(nextChunk(8, CHUNK_TARGET_MS * 3), 4);
  assert.equal(nextChunk(1, CHUNK_TARGET_MS * 30), 1);
});

test('compile errors map back through the chunk rewrite and the loop budget to the student column', () => {
  const line = '  let zz = id.x + wg.x; for (var i = 0u; i < 2u; i++) { o[i] = bad; }';
  const src = `${HEAD}@compute @workgroup_size(4)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(workgroup_id) wg: vec3u) {${line.slice(1)}
}
`;
  const studentLine = src.split('\n')[2];
  const { budgeted, chunked, column } = rewriteStudent(src, 1, true);
  assert.ok(chunked && budgeted.loops === 1);
  const compiled = budgeted.source.split('\n')[2];
  // the compiler's column of `bad` in the compiled text, mapped back: the student's column
  assert.equal(column(3, compiled.indexOf('bad') + 1), studentLine.indexOf('bad') + 1);
  assert.equal(column(3, compiled.indexOf('wg: vec3u') + 1), studentLine.indexOf('wg: vec3u') + 1);
  // unchunked (hardware adapters): the loop budget's mapping alone
  const plain = rewriteStudent(src, 1, false);
  assert.equal(plain.chunked, null);
  const plainLine = plain.budgeted.source.split('\n')[2];
  assert.equal(plain.column(3, plainLine.indexOf('bad') + 1), studentLine.indexOf('bad') + 1);
});
