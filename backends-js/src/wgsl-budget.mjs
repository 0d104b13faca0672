// The loop budget of students' kernels (issue 21): before compiling, every `loop`, `for` and
// `while` of the student's source gets a counter, so a loop that never ends stops after
// `max_loop_iterations` iterations (the op table's limits) and sets a flag the runner reads
// back (BACKEND naming the budget). Neither software adapter can interrupt a running shader:
// SwiftShader wedges WebGPU for the whole browser, lavapipe silently ends a loop after 65535
// iterations (a wrong result). Twin: pylib/gpulab/wgsl_budget.py (test_wgsl_twins compares
// the rewritten text on the scanner's corpus).
//
// Each loop gets its OWN function-scope counter, declared just before the loop keyword and
// checked first thing in the body:
//   var _gpulab_n3: u32 = 0u; for (...) { _gpulab_n3 += 1u; if (_gpulab_n3 > B) { flag; break; } ...
// Why not one module-private counter per invocation: a private variable is never uniform, so
// a break on it makes every later workgroupBarrier() non-uniform and Tint and naga refuse the
// tiled matmul; a function variable counted in a uniform loop stays uniform. Per loop is also
// lavapipe's own rule (65535 iterations per loop entry): with B below it, a loop lavapipe
// would cut short trips the budget first, so both adapters give the same answer.
// Nothing inserted holds a newline: line numbers stay the student's; columns after an
// insertion on its line are mapped back by originalColumn().
import { stripComments } from './wgsl-scan.mjs';

/** The flag variable (a storage binding appended after the student's). */
export const FLAG = '_gpulab_budget';
// a keyword not inside a longer identifier (any non-ASCII character but blankspace may be part
// of one)
const KEYWORD = /(?<![A-Za-z0-9_]|[^\x00-\x7f\u0085\u200e\u200f\u2028\u2029])(loop|for|while)(?![A-Za-z0-9_]|[^\x00-\x7f\u0085\u200e\u200f\u2028\u2029])/g;
// WGSL blankspace, spelled as the scanner does (JS and Python disagree on \s)
const BLANK = '\t\n\v\f\r \u0085\u200e\u200f\u2028\u2029';

/**
 * @typedef {{offset: number, text: string}} Insertion at `offset` of the original source
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
  return code[i] === '{' ? i : -1;
}

/**
 * The source with every loop budgeted (unchanged when it has no loop).
 * @param {string} source @param {number} budget @param {number} flagBinding
 * @returns {Budgeted}
 */
export function budgetLoops(source, budget, flagBinding) {
  const code = stripComments(source);
  /** @type {Insertion[]} */
  const insertions = [];
  let loops = 0;
  for (const m of code.matchAll(KEYWORD)) {
    const at = /** @type {number} */ (m.index);
    const brace = bodyBrace(code, m[1], at + m[1].length);
    if (brace < 0) continue;
    const n = `_gpulab_n${loops}`;
    loops++;
    insertions.push({ offset: at, text: `var ${n}: u32 = 0u; ` });
    insertions.push({ offset: brace + 1, text: ` ${n} += 1u; if (${n} > ${budget}u) ` +
      `{ atomicStore(&${FLAG}, 1u); break; }` });
  }
  if (!loops) return { source, loops, insertions };
  insertions.sort((a, b) => a.offset - b.offset);
  let out = '';
  let from = 0;
  for (const ins of insertions) {
    out += source.slice(from, ins.offset) + ins.text;
    from = ins.offset;
  }
  out += source.slice(from) + `\n@group(0) @binding(${flagBinding}) ` +
    `var<storage, read_write> ${FLAG}: atomic<u32>;\n`;
  return { source: out, loops, insertions };
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
