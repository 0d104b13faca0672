// The student `wgsl` op and its `wgsl_output` projection (protocol version 5): the
// validator's part. Attribute checkers (source size, results, workgroup counts, params), the
// shape and dtype rules, and the binding convention checked against the source by the scanner
// (wgsl-scan.mjs) before any device work. Twin: pylib/gpulab/wgsl_check.py (same checks in the
// same order, the same words; pylib/tests/test_wgsl_twins.py compares them).
//
// The convention (docs/playground.md): `@group(0) @binding(i)` for input i (var<storage, read>
// array<T>), then one binding per result in declaration order (var<storage, read_write>
// array<T> or array<atomic<T>>), then, when params are given, one var<uniform> of a struct
// whose members are exactly the params' names, each f32, i32 or u32; an @compute entry `main`.
import { nodeError } from './errors.mjs';
import { LIMITS } from './optable.mjs';
import { DTYPE_NAMES } from './dtypes.mjs';
import { lineIndex, scanWgsl } from './wgsl-scan.mjs';
import { checkBounds, refusalMessage } from './wgsl-bounds.mjs';

/** The element type a dtype has in a WGSL buffer (bool is a u32 0/1 word on GPUs). */
export const WGSL_ELEMENT = Object.freeze({ float32: 'f32', int32: 'i32', uint32: 'u32', bool: 'u32' });
const SCALARS = ['f32', 'i32', 'u32'];
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** @param {unknown} v */
const isInt = (v) => typeof v === 'number' && Number.isInteger(v);
/** @param {unknown} v */
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v) &&
  !ArrayBuffer.isView(v);

/** UTF-8 length without allocating the bytes. @param {string} s */
export function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length &&
      (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) { n += 4; i++; }
    else n += 3;
  }
  return n;
}

/** A value in a message, cut short. @param {unknown} v */
function show(v) {
  if (v === undefined) return 'null';  // Python's view of a missing field (None)
  try {
    const s = JSON.stringify(v) ?? String(v);
    return s.length > 60 ? `${s.slice(0, 57)}...` : s;
  } catch {
    return typeof v;
  }
}

/** @typedef {{name: string, shape: number[], dtype: string}} WgslResult */

/** The attribute checkers of the two ops, merged into the validator's ATTR_CHECKS. */
export const WGSL_ATTR_CHECKS = {
  /** @param {unknown} value @param {{id: number, op: string}} node @param {string} name */
  wgsl_source(value, node, name) {
    if (typeof value !== 'string' || value.length === 0) {
      throw nodeError('VALIDATION', node, `${name} must be a non-empty string of WGSL, got ${show(value)}`);
    }
    const bytes = utf8Length(value);
    if (bytes > LIMITS.max_wgsl_bytes) {
      throw nodeError('LIMIT', node, `${name} is ${bytes} bytes of UTF-8, more than ` +
        `max_wgsl_bytes ${LIMITS.max_wgsl_bytes}`);
    }
    return value;
  },

  /** @param {unknown} value @param {{id: number, op: string}} node @param {string} name */
  wgsl_results(value, node, name) {
    if (!Array.isArray(value) || value.length === 0) {
      throw nodeError('VALIDATION', node, `${name} must be a non-empty list of {name, shape, dtype}, ` +
        `got ${show(value)}`);
    }
    if (value.length > LIMITS.max_outputs) {
      throw nodeError('LIMIT', node, `${name} has ${value.length} entries, more than max_outputs ` +
        `${LIMITS.max_outputs}`);
    }
    const names = new Set();
    return value.map((r, i) => {
      const where = `${name}[${i}]`;
      if (!isObject(r)) throw nodeError('VALIDATION', node, `${where} must be an object {name, shape, dtype}`);
      const extra = Object.keys(r).find((k) => !['name', 'shape', 'dtype'].includes(k));
      if (extra !== undefined) throw nodeError('VALIDATION', node, `${where} has unknown field "${extra}"`);
      if (typeof r.name !== 'string' || !NAME.test(r.name)) {
        throw nodeError('VALIDATION', node, `${where}.name must be an identifier, got ${show(r.name)}`);
      }
      if (names.has(r.name)) throw nodeError('VALIDATION', node, `${where}.name "${r.name}" is used twice`);
      names.add(r.name);
      const shape = checkShape(r.shape, node, `${where}.shape`);
      if (typeof r.dtype !== 'string' || !DTYPE_NAMES.includes(r.dtype)) {
        throw nodeError('VALIDATION', node, `${where}.dtype must be one of ${DTYPE_NAMES.join(', ')}, ` +
          `got ${show(r.dtype)}`);
      }
      return { name: r.name, shape, dtype: r.dtype };
    });
  },

  /** @param {unknown} value @param {{id: number, op: string}} node @param {string} name */
  workgroups(value, node, name) {
    if (!Array.isArray(value) || value.length < 1 || value.length > 3 ||
      value.some((d) => !isInt(d) || d < 1)) {
      throw nodeError('VALIDATION', node, `${name} must be a list of 1 to 3 integers >= 1, got ${show(value)}`);
    }
    const max = LIMITS.max_workgroups_per_dimension;
    const over = value.findIndex((d) => d > max);
    if (over >= 0) {
      throw nodeError('LIMIT', node, `${name}[${over}] = ${value[over]} is more than ` +
        `max_workgroups_per_dimension ${max}`);
    }
    return [...value, 1, 1].slice(0, 3);
  },

  /** @param {unknown} value @param {{id: number, op: string}} node @param {string} name */
  wgsl_params(value, node, name) {
    if (!isObject(value)) {
      throw nodeError('VALIDATION', node, `${name} must be an object {name: number}, got ${show(value)}`);
    }
    /** @type {Record<string, number>} */
    const out = Object.create(null);
    for (const key of Object.keys(value).sort()) {
      const v = value[key];
      if (!NAME.test(key)) throw nodeError('VALIDATION', node, `${name}: "${key}" is not an identifier`);
      if (typeof v !== 'number' || !Number.isFinite(v)) {
        throw nodeError('VALIDATION', node, `${name}.${key} must be a finite number, got ${show(v)}`);
      }
      out[key] = v;
    }
    return out;
  },

  /** @param {unknown} value @param {{id: number, op: string}} node @param {string} name */
  index(value, node, name) {
    if (!isInt(value) || value < 0) {
      throw nodeError('VALIDATION', node, `${name} must be an integer >= 0, got ${show(value)}`);
    }
    return value;
  },
};

/** @param {unknown} value @param {{id: number, op: string}} node @param {string} where */
function checkShape(value, node, where) {
  if (!Array.isArray(value) || value.some((d) => !isInt(d) || d < 1)) {
    throw nodeError('VALIDATION', node, `${where} must be a list of integers >= 1, got ${show(value)}`);
  }
  if (value.length > LIMITS.max_rank) {
    throw nodeError('LIMIT', node, `${where} ${show(value)} has rank ${value.length}, more than ` +
      `max_rank ${LIMITS.max_rank}`);
  }
  let count = 1;
  for (const d of value) count *= d;
  if (count > LIMITS.max_elements) {
    throw nodeError('LIMIT', node, `${where} ${show(value)} has ${count} elements, more than ` +
      `max_elements ${LIMITS.max_elements}`);
  }
  return [...value];
}

/**
 * @typedef {{id: number, op: string, operands: number[], attrs: Record<string, any>,
 *   shape: number[], dtype: string}} Node
 */

/**
 * Shape rules that read their operand nodes (a wgsl_output reads its wgsl node's results).
 * Each returns the node's shape; `wgsl` is the shape of its first result.
 * @type {Record<string, (node: Node, operands: Node[]) => number[]>}
 */
export const NODE_SHAPE_RULES = {
  wgsl(node, inputs) {
    // every input is bound as a buffer, and WebGPU has no zero-size binding
    const empty = inputs.findIndex((n) => n.shape.includes(0));
    if (empty >= 0) {
      throw nodeError('VALIDATION', node, `operand inputs[${empty}] [${inputs[empty].shape.join(', ')}] ` +
        'is empty: a zero-size tensor cannot be bound to a student kernel');
    }
    return [...node.attrs.results[0].shape];
  },
  wgsl_output(node, [of]) {
    if (of.op !== 'wgsl') {
      throw nodeError('VALIDATION', node, `operand a must be a wgsl node, got node ${of.id} (${of.op})`);
    }
    const { results } = of.attrs;
    if (node.attrs.index >= results.length) {
      throw nodeError('VALIDATION', node, `index ${node.attrs.index} is past the ${results.length} ` +
        `result(s) of node ${of.id} (wgsl)`);
    }
    return [...results[node.attrs.index].shape];
  },
};

/**
 * Dtype rules that read their operand nodes: the binding convention is checked here (it needs
 * the inputs' dtypes), after shapes, so the first error agrees with the Python twin.
 * @type {Record<string, (node: Node, operands: Node[]) => string>}
 */
export const NODE_DTYPE_RULES = {
  wgsl(node, inputs) {
    checkConvention(node, inputs);
    return node.attrs.results[0].dtype;
  },
  wgsl_output(node, [of]) {
    return of.attrs.results[node.attrs.index].dtype;
  },
};

/**
 * A mismatch with the convention, located in the student's source: the message ends with the
 * line and column and the line itself, the form compiler errors take too (wgsl-errors.mjs).
 * @param {Node} node @param {string} source @param {{line: number, column: number}|null} at
 * @param {string} detail
 */
function conventionError(node, source, at, detail) {
  const where = at ? ` at line ${at.line}, column ${at.column}` : '';
  const snippet = at ? `\n${sourceLine(source, at.line)}` : '';
  return nodeError('VALIDATION', node, `WGSL binding error${where}: ${detail}${snippet}`);
}

/** "  3 | text" for a 1-based line. @param {string} source @param {number} line */
export function sourceLine(source, line) {
  const text = source.split('\n')[line - 1] ?? '';
  return `${String(line).padStart(4)} | ${text.replace(/\r$/, '')}`;
}

/**
 * What the convention expects at each binding.
 * @param {Node} node @param {Node[]} inputs
 * @returns {{kind: string, dtype?: string, label: string}[]}
 */
function expectedBindings(node, inputs) {
  const out = inputs.map((n, i) => ({ kind: 'input', dtype: n.dtype, label: `input ${i} (node ${n.id}, ${n.dtype})` }));
  node.attrs.results.forEach((/** @type {WgslResult} */ r, i) =>
    out.push({ kind: 'output', dtype: r.dtype, label: `result ${i} "${r.name}" (${r.dtype})` }));
  if (Object.keys(node.attrs.params).length) out.push({ kind: 'params', label: 'the params uniform' });
  return out;
}

/** The declaration a binding needs, for messages. @param {{kind: string, dtype?: string}} e */
function wants(e) {
  if (e.kind === 'params') return 'var<uniform> of a struct of the params';
  const t = WGSL_ELEMENT[/** @type {keyof typeof WGSL_ELEMENT} */ (e.dtype)];
  return e.kind === 'input' ? `var<storage, read> array<${t}>` : `var<storage, read_write> array<${t}>`;
}

/** @param {string} type @param {string} element @param {boolean} atomicOk */
function isArrayOf(type, element, atomicOk) {
  const m = /^array<(.+?)(?:,[^,<>]+)?>$/.exec(type);
  if (!m) return false;
  return m[1] === element || (atomicOk && m[1] === `atomic<${element}>`);
}

/**
 * The binding convention against the scanned source; VALIDATION naming the node, the binding
 * and the source line at the first mismatch.
 * @param {Node} node @param {Node[]} inputs
 */
export function checkConvention(node, inputs) {
  const { source, params } = node.attrs;
  const scan = scanWgsl(source);
  const fail = (/** @type {any} */ at, /** @type {string} */ detail) => conventionError(node, source, at, detail);
  if (!scan.computeEntries.includes('main')) {
    throw fail(null, 'the source has no @compute entry point named main');
  }
  const expected = expectedBindings(node, inputs);
  const resources = scan.vars.filter((v) => v.space === 'storage' || v.space === 'uniform' ||
    v.group !== null || v.binding !== null);
  const seen = new Map();
  for (const v of resources) {
    if (v.group !== 0 || v.binding === null) {
      throw fail(v, `${v.name} must be declared @group(0) @binding(n) (the convention uses group 0 only)`);
    }
    if (seen.has(v.binding)) {
      throw fail(v, `@binding(${v.binding}) is declared twice (${seen.get(v.binding)} and ${v.name})`);
    }
    seen.set(v.binding, v.name);
    if (v.binding >= expected.length) {
      throw fail(v, `@binding(${v.binding}) ${v.name} is past the convention's bindings 0..` +
        `${expected.length - 1} (${countText(inputs.length, node)})`);
    }
    checkBinding(v, expected[v.binding], params, scan, fail);
  }
  const missing = expected.findIndex((_, b) => !seen.has(b));
  if (missing >= 0) {
    const e = expected[missing];
    throw fail(null, `the source declares nothing at @group(0) @binding(${missing}) for ${e.label}: ` +
      `expected ${wants(e)}`);
  }
  // then the source's bounds (wgsl-bounds.mjs), before any compiler sees it
  const refusal = checkBounds(source, node.attrs.workgroups);
  if (refusal) {
    const { message, line } = refusalMessage(source, refusal);
    throw nodeError(/** @type {any} */ (refusal.code), node, `${message}\n${sourceLine(source, line)}`);
  }
}

/** @param {number} inputs @param {Node} node */
function countText(inputs, node) {
  const params = Object.keys(node.attrs.params).length ? ', then the params uniform' : '';
  return `${inputs} input(s), then ${node.attrs.results.length} result(s)${params}`;
}

/**
 * One declared binding against what the convention expects there.
 * @param {import('./wgsl-scan.mjs').ScannedVar} v @param {{kind: string, dtype?: string, label: string}} e
 * @param {Record<string, number>} params @param {import('./wgsl-scan.mjs').Scan} scan
 * @param {(at: any, detail: string) => Error} fail
 */
function checkBinding(v, e, params, scan, fail) {
  const declared = `var<${[v.space, v.access].filter(Boolean).join(', ')}> ${v.name}: ${v.type}`;
  const mismatch = () => fail(v, `@binding(${v.binding}) is ${e.label}: expected ${wants(e)}, ` +
    `the source declares ${declared}`);
  if (e.kind === 'params') {
    if (v.space !== 'uniform') throw mismatch();
    checkParamsStruct(v, params, scan, fail);
    return;
  }
  const access = v.access || 'read';
  const element = WGSL_ELEMENT[/** @type {keyof typeof WGSL_ELEMENT} */ (e.dtype)];
  const okAccess = e.kind === 'input' ? access === 'read' : access === 'read_write';
  if (v.space !== 'storage' || !okAccess || !isArrayOf(v.type, element, e.kind === 'output')) {
    throw mismatch();
  }
}

/**
 * The params uniform: a struct declared in the source whose members are exactly the params'
 * names, each a scalar; each value fits its member's type.
 * @param {import('./wgsl-scan.mjs').ScannedVar} v @param {Record<string, number>} params
 * @param {import('./wgsl-scan.mjs').Scan} scan @param {(at: any, detail: string) => Error} fail
 */
function checkParamsStruct(v, params, scan, fail) {
  const struct = scan.structs.find((s) => s.name === v.type);
  if (!struct) throw fail(v, `the params uniform ${v.name} must have a struct type declared in the source, got ${v.type}`);
  const at = { line: struct.line, column: 1 };
  for (const m of struct.members) {
    if (!SCALARS.includes(m.type)) {
      throw fail(at, `params struct ${struct.name}: member ${m.name || '?'} must be f32, i32 or u32, got ${m.type}`);
    }
    if (!Object.hasOwn(params, m.name)) {
      throw fail(at, `params struct ${struct.name} has member ${m.name}, which params does not give`);
    }
    checkParamValue(m, params[m.name], fail, at);
  }
  const names = new Set(struct.members.map((m) => m.name));
  const extra = Object.keys(params).find((k) => !names.has(k));
  if (extra !== undefined) throw fail(at, `params.${extra} is not a member of struct ${struct.name}`);
}

/** @param {{name: string, type: string}} m @param {number} value @param {any} fail @param {any} at */
function checkParamValue(m, value, fail, at) {
  if (m.type === 'f32') {
    if (!Number.isFinite(Math.fround(value))) throw fail(at, `params.${m.name} = ${value} is not a finite f32`);
    return;
  }
  const [lo, hi] = m.type === 'i32' ? [-(2 ** 31), 2 ** 31 - 1] : [0, 2 ** 32 - 1];
  if (!Number.isInteger(value) || value < lo || value > hi) {
    throw fail(at, `params.${m.name} = ${value} is not a ${m.type} (an integer from ${lo} to ${hi})`);
  }
}

/**
 * The params uniform's bytes in struct member order (each member 4 bytes, the size rounded up to
 * 16): what both executors upload. Empty params give no bytes.
 * @param {string} source @param {Record<string, number>} params
 * @returns {Array<['f32'|'u32'|'i32', number]>}
 */
export function paramWords(source, params) {
  if (!Object.keys(params).length) return [];
  const scan = scanWgsl(source);
  const uniform = scan.vars.find((v) => v.space === 'uniform');
  const struct = scan.structs.find((s) => s.name === uniform?.type);
  return (struct?.members ?? []).map((m) =>
    /** @type {['f32'|'u32'|'i32', number]} */ ([m.type, params[m.name]]));
}

export { lineIndex };
