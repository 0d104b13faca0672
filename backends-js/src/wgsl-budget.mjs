// The loop budget of students' kernels: before compiling, every `loop`, `for` and
// `while` of the student's source is counted, so a kernel whose loops run past
// `max_loop_iterations` (B, the op table's limits) sets a flag the runner reads back (BACKEND
// naming the budget) and a loop that never ends stops. Neither software adapter can interrupt
// a running shader: SwiftShader wedges WebGPU for the whole browser, lavapipe silently ends the
// loops of an invocation after 65535 iterations in all (a wrong result). Twin:
// pylib/gpulab/wgsl_budget.py (test_wgsl_twins compares the rewritten text on a corpus).
//
// Two counters, inserted as:
//   fn f(...) { var _gpulab_n3: u32 = 0u; ...
//   _gpulab_iters += 1u; if (_gpulab_iters > B) { flag } for (...) {
//     _gpulab_n3 += 1u; _gpulab_iters += 1u; if (_gpulab_iters > B) { flag } if (_gpulab_n3 > B) { break; } ...
// - `_gpulab_iters` (var<private>): the invocation's loop entries and iterations, every loop
//   of every function; past B it only SETS THE FLAG. lavapipe's cap counts every loop header
//   of an invocation (iterations and exits), never more than this count, so whatever lavapipe
//   would cut short has set the flag first: both adapters give the budget error.
// - `_gpulab_nK` (one per loop, a function variable declared at the top of its function): its
//   iterations in this call of the function; past B the loop BREAKS. Breaking on the private
//   counter would make every later workgroupBarrier() non-uniform (a private variable is
//   never uniform), and Tint and naga would refuse the tiled matmul; a function variable
//   counted in a uniform loop stays uniform, and an `if` that only sets the flag changes no
//   uniformity. Each loop thus stops within B iterations per call of its function. A source
//   with no barrier (nothing that needs uniform control flow) also breaks on `_gpulab_iters`,
//   so all its loops stop once the invocation passes B (a helper's endless loop called from a
//   loop included).
// Nothing inserted holds a newline: line numbers stay the student's; columns after an
// insertion on its line are mapped back by originalColumn().
import { stripComments } from './wgsl-scan.mjs';

/** The flag variable (a storage binding appended after the student's). */
export const FLAG = '_gpulab_budget';
const ITERS = '_gpulab_iters';
// What needs uniform control flow in a compute shader: a source naming none of these may also
// break on the invocation's count (then every loop of the invocation stops at the budget)
const UNIFORM_NEEDED = /(?<![A-Za-z0-9_]|[^\x00-\x7f\u0085\u200e\u200f\u2028\u2029])(?:workgroupBarrier|storageBarrier|textureBarrier|workgroupUniformLoad|subgroup|quad)/;
const FN = /(?<![A-Za-z0-9_]|[^\x00-\x7f\u0085\u200e\u200f\u2028\u2029])fn(?![A-Za-z0-9_]|[^\x00-\x7f\u0085\u200e\u200f\u2028\u2029])/g;
// a keyword not inside a longer identifier (any non-ASCII character but blankspace may be part
// of one)
const KEYWORD = /(?<![A-Za-z0-9_]|[^\x00-\x7f\u0085\u200e\u200f\u2028\u2029])(loop|for|while)(?![A-Za-z0-9_]|[^\x00-\x7f\u0085\u200e\u200f\u2028\u2029])/g;
// WGSL blankspace, spelled as the scanner does (JS and Python disagree on \s)
const BLANK = '\t\n\v\f\r \u0085\u200e\u200f\u2028\u2029';

/**
 * @typedef {{offset: number, text: string, rank?: number}} Insertion at `offset` of the
 *   original source (rank orders insertions at one offset: declarations, body checks, entries)
 * @typedef {{source: string, loops: number, insertions: Insertion[]}} Budgeted
 */

/** @param {string} code @param {number} i the first index past blankspace from i */
function skipBlank(code, i) {
  while (i < code.length && BLANK.includes(code[i])) i++;
  return i;
}

/** The index of the `)` matching code[i] === '(' (or -1). @param {string} code @param {number} i */
function matchParen(code, i) {
  let depth = 0;
  for (let j = i; j < code.length; j++) {
    if (code[j] === '(') depth++;
    else if (code[j] === ')' && --depth === 0) return j;
  }
  return -1;
}

/**
 * The `{` of the body of the loop whose keyword ends at `end`, or -1 (malformed: left to the
 * compiler). @param {string} code @param {string} word @param {number} end
 */
function bodyBrace(code, word, end) {
  let i = skipBlank(code, end);
  if (word === 'for') {
    if (code[i] !== '(') return -1;
    const close = matchParen(code, i);
    if (close < 0) return -1;
    i = skipBlank(code, close + 1);
  } else if (word === 'while') {
    while (i < code.length && code[i] !== '{' && code[i] !== ';' && code[i] !== '}') i++;
  }
  i = skipAttributes(code, i);
  return code[i] === '{' ? i : -1;
}

/**
 * Past the attributes at i (`@name` or `@name(...)`, the body's `@diagnostic(...)`).
 * @param {string} code @param {number} i
 */
function skipAttributes(code, i) {
  while (code[i] === '@') {
    let j = skipBlank(code, i + 1);
    const start = j;
    while (j < code.length && /[A-Za-z0-9_]/.test(code[j])) j++;
    if (j === start) return i;
    const k = skipBlank(code, j);
    if (code[k] === '(') {
      const close = matchParen(code, k);
      if (close < 0) return i;
      j = close + 1;
    }
    i = skipBlank(code, j);
  }
  return i;
}

/**
 * Where the loop statement at `at` starts: before its attributes (`@diagnostic(...) for`), so
 * what is inserted before the statement does not split them from it.
 * @param {string} code @param {number} at
 */
function statementStart(code, at) {
  let start = at;
  for (;;) {
    let j = start - 1;
    while (j >= 0 && BLANK.includes(code[j])) j--;
    if (code[j] === ')') {
      let depth = 0;
      for (; j >= 0; j--) {
        if (code[j] === ')') depth++;
        else if (code[j] === '(' && --depth === 0) break;
      }
      j--;
      while (j >= 0 && BLANK.includes(code[j])) j--;
    }
    const end = j;
    while (j >= 0 && /[A-Za-z0-9_]/.test(code[j])) j--;
    if (j === end) return start;
    while (j >= 0 && BLANK.includes(code[j])) j--;
    if (code[j] !== '@') return start;
    start = j;
  }
}

/**
 * The function bodies: [the offset of `{`, of its matching `}`], in source order.
 * @param {string} code @returns {Array<[number, number]>}
 */
function functionBodies(code) {
  /** @type {Array<[number, number]>} */
  const bodies = [];
  let after = 0;
  for (const m of code.matchAll(FN)) {
    const at = /** @type {number} */ (m.index);
    if (at < after) continue;
    let i = code.indexOf('(', at);
    const close = i < 0 ? -1 : matchParen(code, i);
    if (close < 0) break;
    i = close + 1;
    while (i < code.length && code[i] !== '{' && code[i] !== ';' && code[i] !== '}') i++;
    if (code[i] !== '{') continue;
    let depth = 0;
    let j = i;
    for (; j < code.length; j++) {
      if (code[j] === '{') depth++;
      else if (code[j] === '}' && --depth === 0) break;
    }
    bodies.push([i, j]);
    after = j;
  }
  return bodies;
}

/** @param {number} budget */
const flagIf = (budget) => `${ITERS} += 1u; if (${ITERS} > ${budget}u) { atomicStore(&${FLAG}, 1u); }`;

/**
 * The source with every loop budgeted (unchanged when it has no loop inside a function).
 * @param {string} source @param {number} budget @param {number} flagBinding
 * @returns {Budgeted}
 */
export function budgetLoops(source, budget, flagBinding) {
  const code = stripComments(source);
  /** @type {Insertion[]} */
  const insertions = [];
  const bodies = functionBodies(code);
  const stop = UNIFORM_NEEDED.test(code) ? '' : ` || ${ITERS} > ${budget}u`;
  /** @type {string[][]} each function's counter declarations */
  const decls = bodies.map(() => []);
  let loops = 0;
  let f = 0;
  for (const m of code.matchAll(KEYWORD)) {
    const at = /** @type {number} */ (m.index);
    while (f < bodies.length && bodies[f][1] < at) f++;
    if (f === bodies.length || at < bodies[f][0]) continue; // outside a function: the compiler's
    const brace = bodyBrace(code, m[1], at + m[1].length);
    if (brace < 0) continue;
    const n = `_gpulab_n${loops}`;
    loops++;
    decls[f].push(` var ${n}: u32 = 0u;`);
    insertions.push({ offset: statementStart(code, at), text: `${flagIf(budget)} `, rank: 2 });
    insertions.push({ offset: brace + 1, rank: 1,
      text: ` ${n} += 1u; ${flagIf(budget)} if (${n} > ${budget}u${stop}) { break; }` });
  }
  if (!loops) return { source, loops, insertions: [] };
  bodies.forEach(([open], i) => {
    if (decls[i].length) insertions.push({ offset: open + 1, text: decls[i].join(''), rank: 0 });
  });
  insertions.sort((a, b) => a.offset - b.offset || (a.rank ?? 0) - (b.rank ?? 0));
  let out = '';
  let from = 0;
  for (const ins of insertions) {
    out += source.slice(from, ins.offset) + ins.text;
    from = ins.offset;
  }
  out += source.slice(from) + `\nvar<private> ${ITERS}: u32;\n@group(0) @binding(${flagBinding}) ` +
    `var<storage, read_write> ${FLAG}: atomic<u32>;\n`;
  return { source: out, loops, insertions: insertions.map(({ offset, text }) => ({ offset, text })) };
}

/**
 * A compiler's (line, column) in the budgeted source as the student's: the same line, the
 * column less what was inserted before it on that line (a position inside inserted text maps
 * to where it was inserted). Columns count UTF-16 units in the page and characters natively;
 * the inserted text is ASCII, so the shift is the same in either.
 * @param {string} source the student's @param {Insertion[]} insertions
 * @param {number} line @param {number} column
 */
export function originalColumn(source, insertions, line, column) {
  let start = 0;
  for (let l = 1; l < line; l++) {
    const nl = source.indexOf('\n', start);
    if (nl < 0) return column;
    start = nl + 1;
  }
  let shift = 0;
  for (const ins of insertions) {
    const col = ins.offset - start + 1; // the student's column of the insertion point
    if (ins.offset < start || source.slice(start, ins.offset).includes('\n')) continue;
    if (column - shift < col) break;
    if (column - shift < col + ins.text.length) return col;
    shift += ins.text.length;
  }
  return column - shift;
}
