// A student's dispatch in chunks, on software adapters: SwiftShader cannot stop a running
// shader, so after the per-submission deadline (deadline.mjs) whatever was submitted runs to
// its end and WebGPU stays busy for the whole browser. Split into submissions of a few
// workgroups each, with the deadline checked between them, at most one chunk is left running.
//
// The entry point `main` is rewritten so each chunk sees the ids of the whole dispatch: its
// `@builtin(workgroup_id)` and `@builtin(global_invocation_id)` parameters get the chunk's
// offset added (a uniform at a binding of its own), `@builtin(num_workgroups)` is the whole
// dispatch's; local ids are unchanged. The parameter is renamed by a prefix and the student's
// name declared as a `let` at the top of the body, so only text is inserted (compile errors map
// back with originalColumn(), as for the loop budget) and nothing inserted holds a newline.
// Where the rewrite cannot be sure (a builtin inside a struct parameter, a workgroup_size that
// is not integer literals, an entry point it cannot find) the source is not chunked (null).
import { stripComments } from '../../wgsl-scan.mjs';

/** The chunk uniform's variable (a binding appended after the loop budget's flag). */
export const CHUNK = '_gpulab_chunk';
const PREFIX = '_gpulab_whole_';
// the uniform's fields: offsets of the chunk in workgroups and in invocations, the whole size
const FIELD = { workgroup_id: 'wg', global_invocation_id: 'inv', num_workgroups: 'num' };
/** Bytes of the chunk uniform (three vec3u, each 16-byte aligned). */
export const CHUNK_UNIFORM_BYTES = 48;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const BLANK = /[\t\n\v\f\r \u0085\u200e\u200f\u2028\u2029]/;
const ENTRY = /(?<![A-Za-z0-9_]|[^\x00-\x7f\u0085\u200e\u200f\u2028\u2029])fn[\t\n\v\f\r \u0085\u200e\u200f\u2028\u2029]+main[\t\n\v\f\r \u0085\u200e\u200f\u2028\u2029]*\(/g;

/**
 * @typedef {import('../../wgsl-budget.mjs').Insertion} Insertion
 * @typedef {{source: string, insertions: Insertion[], workgroupSize: number[]}} Chunked
 */

/** The index of the `)` matching code[i] === '(' (or -1). @param {string} code @param {number} i */
function matchParen(code, i) {
  let depth = 0;
  for (let j = i; j < code.length; j++) {
    if (code[j] === '(') depth++;
    else if (code[j] === ')' && --depth === 0) return j;
  }
  return -1;
}

/** Top-level comma-separated parts of code[from, to): [start, end] offsets. */
function splitTop(/** @type {string} */ code, /** @type {number} */ from, /** @type {number} */ to) {
  /** @type {Array<[number, number]>} */
  const parts = [];
  let depth = 0;
  let start = from;
  for (let i = from; i < to; i++) {
    const c = code[i];
    if (c === '(' || c === '<' || c === '[') depth++;
    else if (c === ')' || c === '>' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      parts.push([start, i]);
      start = i + 1;
    }
  }
  if (code.slice(start, to).trim()) parts.push([start, to]);
  return parts;
}

/** An integer literal's value (decimal or hex, optional i/u suffix), else null. @param {string} text */
function intLiteral(text) {
  const t = text.trim();
  const m = /^(0[xX][0-9a-fA-F]+|0|[1-9][0-9]*)[iu]?$/.exec(t);
  return m ? Number(m[1]) : null;
}

/**
 * The workgroup size of the entry point whose `fn` is at `at`: from its `@workgroup_size(...)`
 * attribute (the text since the previous declaration), only if every argument is an integer
 * literal; else null. @param {string} code @param {number} at
 */
function workgroupSize(code, at) {
  let from = at;
  while (from > 0 && code[from - 1] !== ';' && code[from - 1] !== '}') from--;
  const attrs = code.slice(from, at);
  const m = /@[\t\n\v\f\r ]*workgroup_size[\t\n\v\f\r ]*\(/.exec(attrs);
  if (!m) return null;
  const open = from + m.index + m[0].length - 1;
  const close = matchParen(code, open);
  if (close < 0 || close > at) return null;
  const sizes = splitTop(code, open + 1, close).map(([a, b]) => intLiteral(code.slice(a, b)));
  if (!sizes.length || sizes.length > 3 || sizes.some((s) => s === null || s < 1)) return null;
  while (sizes.length < 3) sizes.push(1);
  return /** @type {number[]} */ (sizes);
}

/**
 * One parameter of the entry point: its name's offset and the builtin it names (null: none,
 * a struct of builtins or anything the rewrite cannot read).
 * @param {string} code @param {number} from @param {number} to
 */
function parameter(code, from, to) {
  const text = code.slice(from, to);
  const colon = text.lastIndexOf(':');
  if (colon < 0) return null;
  const head = text.slice(0, colon);
  const m = /@[\t\n\v\f\r ]*builtin[\t\n\v\f\r ]*\([\t\n\v\f\r ]*([A-Za-z_0-9]+)[\t\n\v\f\r ]*\)/.exec(head);
  if (!m) return null;
  let end = head.length;
  while (end > 0 && BLANK.test(head[end - 1])) end--;
  let start = end;
  while (start > 0 && /[A-Za-z0-9_]/.test(head[start - 1])) start--;
  const name = head.slice(start, end);
  if (!IDENT.test(name) || (start > 0 && !BLANK.test(head[start - 1]) && head[start - 1] !== ')')) {
    return null;
  }
  return { builtin: m[1], name, offset: from + start };
}

/**
 * The source rewritten to run in chunks, or null where the rewrite cannot be sure.
 * @param {string} source the student's
 * @param {number} binding the chunk uniform's binding
 * @returns {Chunked|null}
 */
export function chunkSource(source, binding) {
  const code = stripComments(source);
  const entries = [...code.matchAll(ENTRY)];
  if (entries.length !== 1) return null;
  const at = /** @type {number} */ (entries[0].index);
  const workgroup = workgroupSize(code, at);
  if (!workgroup) return null;
  const open = at + entries[0][0].length - 1;
  const close = matchParen(code, open);
  if (close < 0) return null;
  let body = close + 1;
  while (body < code.length && code[body] !== '{' && code[body] !== ';' && code[body] !== '}') body++;
  if (code[body] !== '{') return null;
  /** @type {Insertion[]} */
  const insertions = [];
  let lets = '';
  for (const [a, b] of splitTop(code, open + 1, close)) {
    const p = parameter(code, a, b);
    if (!p) return null; // a struct of builtins, or a parameter we cannot read
    const field = FIELD[/** @type {keyof typeof FIELD} */ (p.builtin)];
    if (!field) continue; // local ids stay the chunk's own, which are the whole's
    insertions.push({ offset: p.offset, text: PREFIX });
    lets += field === 'num' ? ` let ${p.name} = ${CHUNK}.num;`
      : ` let ${p.name} = ${PREFIX}${p.name} + ${CHUNK}.${field};`;
  }
  if (lets) insertions.push({ offset: body + 1, text: lets });
  let out = '';
  let from = 0;
  for (const ins of insertions) {
    out += source.slice(from, ins.offset) + ins.text;
    from = ins.offset;
  }
  out += source.slice(from) + `\nstruct _gpulab_Chunk { wg: vec3u, inv: vec3u, num: vec3u }\n` +
    `@group(0) @binding(${binding}) var<uniform> ${CHUNK}: _gpulab_Chunk;\n`;
  return { source: out, insertions, workgroupSize: workgroup };
}

/** The axis a dispatch is split along: x, else y or z when x is 1. @param {number[]} dispatch */
export function chunkAxis(dispatch) {
  const [x = 1, y = 1] = dispatch;
  if (x > 1) return 0;
  return y > 1 ? 1 : 2;
}

/**
 * The chunk uniform's words for workgroups [start, start + count) along `axis`.
 * @param {number[]} dispatch the whole @param {number[]} size the workgroup size
 * @param {number} axis @param {number} start
 */
export function chunkWords(dispatch, size, axis, start) {
  const words = new Uint32Array(CHUNK_UNIFORM_BYTES / 4);
  words[axis] = start;
  words[4 + axis] = start * size[axis];
  for (let i = 0; i < 3; i++) words[8 + i] = dispatch[i] ?? 1;
  return words;
}

/** A chunk's target time: its size doubles while a chunk takes under half of it. */
export const CHUNK_TARGET_MS = 100;

/**
 * The next chunk's workgroup count after one of `count` took `ms`: doubled while well under
 * the target, halved when over it (at least 1).
 * @param {number} count @param {number} ms
 */
export function nextChunk(count, ms) {
  if (ms < CHUNK_TARGET_MS / 2) return count * 2;
  if (ms > CHUNK_TARGET_MS * 2 && count > 1) return Math.floor(count / 2);
  return count;
}
