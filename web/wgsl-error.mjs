// A student's WGSL error under the cell: the compiler's or the binding checker's
// message ends with the offending line of the shader ("   9 | let meta = ...") and, for
// compiler errors, a caret line; both executors write that form (wgsl-op.mjs,
// webgpu/student.mjs, native/student.py). Shown as a block of the shader with that line marked.
import { el } from './render.mjs';

const LOCATED = /WGSL (compile|binding) error at line (\d+), column (\d+): /;

/**
 * The parts of a located WGSL error message, or null for any other message.
 * @param {string} message
 * @returns {{kind: string, line: number, column: number, head: string, snippet: string[]} | null}
 */
export function parseWgslError(message) {
  const m = LOCATED.exec(message ?? '');
  if (!m) return null;
  const [head, ...rest] = message.split('\n');
  const snippet = rest.filter((l) => /^\s*\d*\s\|/.test(l));
  return { kind: m[1], line: Number(m[2]), column: Number(m[3]), head, snippet };
}

/**
 * Append the shader line of a located WGSL error to an error box (nothing for other errors).
 * @param {HTMLElement} box @param {string} message
 */
export function renderWgslError(box, message) {
  const parsed = parseWgslError(message);
  if (!parsed) return false;
  const pre = el('pre', { class: 'wgsl-error', 'data-line': String(parsed.line),
    'data-column': String(parsed.column), 'aria-label': `WGSL line ${parsed.line}` });
  for (const text of parsed.snippet) {
    const numbered = /^\s*(\d+)\s\|/.exec(text);
    const mark = numbered && Number(numbered[1]) === parsed.line;
    pre.append(el(mark ? 'mark' : 'span', { class: mark ? 'wgsl-line' : 'wgsl-caret', text }), '\n');
  }
  box.append(pre);
  return true;
}
