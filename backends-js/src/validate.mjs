// The graph validator: docs/protocol.md "Validation order and error codes", step by step, so
// that this file and its Python twin (pylib/gpulab/protocol.py) report the same first error.
// It returns the checked graph of docs/architecture.md or throws a GpuLabError.
import { GpuLabError, nodeError } from './errors.mjs';
import { LIMITS, PROTOCOL_VERSIONS, TENSOR_FEATURES, opSpec, operandNames } from './optable.mjs';
import { checkValues } from './values.mjs';
import { DTYPES, DTYPE_NAMES, blockOf, blockShapeProblem, resultDtype, toTypedData } from './dtypes.mjs';
import { SHAPE_RULES, numel, formatShape, sameShape } from './shapes.mjs';
import { NODE_DTYPE_RULES, NODE_SHAPE_RULES, WGSL_ATTR_CHECKS } from './wgsl-op.mjs';

/** @typedef {import('./shapes.mjs').Shape} Shape */
/**
 * @typedef {{id: number, op: string, operands: number[], attrs: Record<string, any>,
 *   shape: Shape, dtype: string, data?: import('./dtypes.mjs').TypedData}} CheckedNode
 * @typedef {{version: number, requiredVersion: number, nodes: CheckedNode[], order: number[],
 *   outputs: {name: string, id: number}[], byId: Map<number, CheckedNode>}} CheckedGraph
 */

// Output names no result may use: `outputs[name] = ...` on an object sets its prototype instead
// (the output vanished); refused by both validators, so natively too.
const RESERVED_NAMES = ['__proto__'];

const NON_FINITE = new Map([['nan', NaN], ['inf', Infinity], ['-inf', -Infinity]]);

/** @param {unknown} v @returns {v is Record<string, unknown>} */
function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

/**
 * Integers only: booleans and non-integral numbers are refused.
 * @param {unknown} v @returns {v is number}
 */
function isInt(v) {
  return typeof v === 'number' && Number.isInteger(v);
}

/**
 * A node id (node, operand or output): an integer in 0..2^53-1. Past 2^53 JSON numbers merge
 * here (2^53 + 1 reads as 2^53) while Python keeps them apart, so both validators refuse them.
 * @param {unknown} v @returns {v is number}
 */
function isId(v) {
  return isInt(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER;
}

/**
 * Every entry of a list, holes included (`every`/`find` skip holes and cannot tell a found
 * `undefined` from none), passes `ok`; returns the index of the first that does not, or -1.
 * @param {unknown[]} list @param {(v: unknown) => boolean} ok
 */
function firstBad(list, ok) {
  for (let i = 0; i < list.length; i++) if (!ok(list[i])) return i;
  return -1;
}

/** @param {unknown} v */
function show(v) {
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  if (v === undefined) return 'undefined';
  try {
    const s = JSON.stringify(v);
    return s.length > 60 ? `${s.slice(0, 57)}...` : s;
  } catch {
    return typeof v;
  }
}

/** @param {string} message */
const invalid = (message) => new GpuLabError('VALIDATION', message);

// ---------------------------------------------------------------- step 1: top level

/** @param {unknown} graph */
function checkTopLevel(graph) {
  if (!isObject(graph)) throw invalid(`graph must be an object, got ${show(graph)}`);
  for (const key of ['version', 'nodes', 'outputs']) {
    if (!Object.hasOwn(graph, key)) throw invalid(`graph is missing "${key}"`);
  }
  if (!isInt(graph.version)) {
    throw invalid(`graph version must be an integer, got ${show(graph.version)}`);
  }
  if (!PROTOCOL_VERSIONS.includes(graph.version)) {
    throw new GpuLabError('UNSUPPORTED_VERSION', `graph version ${graph.version} is not known ` +
      `to this host (known: ${PROTOCOL_VERSIONS.join(', ')})`);
  }
  if (!Array.isArray(graph.nodes) || graph.nodes.length === 0) {
    throw invalid(`graph nodes must be a non-empty list, got ${show(graph.nodes)}`);
  }
  if (!Array.isArray(graph.outputs) || graph.outputs.length === 0) {
    throw invalid(`graph outputs must be a non-empty list, got ${show(graph.outputs)}`);
  }
  if (graph.nodes.length > LIMITS.max_nodes) {
    throw new GpuLabError('LIMIT', `graph has ${graph.nodes.length} nodes, more than ` +
      `max_nodes ${LIMITS.max_nodes}`);
  }
  if (graph.outputs.length > LIMITS.max_outputs) {
    throw new GpuLabError('LIMIT', `graph has ${graph.outputs.length} outputs, more than ` +
      `max_outputs ${LIMITS.max_outputs}`);
  }
}

// ---------------------------------------------------------------- step 2: attributes

/**
 * One checker per attribute type of the op table. A checker returns the normalized value or
 * throws; `attrs` holds the node's attributes checked so far (data needs the shape).
 * @typedef {(value: any, node: {id: number, op: string}, name: string,
 *   attrs: Record<string, any>, spec: Record<string, any>) => any} AttrCheck
 * @type {Record<string, AttrCheck>}
 */
const ATTR_CHECKS = {
  shape(value, node, name) {
    if (!Array.isArray(value)) {
      throw nodeError('VALIDATION', node, `${name} must be a list of integers, got ${show(value)}`);
    }
    if (value.length > LIMITS.max_rank) {
      throw nodeError('LIMIT', node, `${name} ${show(value)} has rank ${value.length}, more ` +
        `than max_rank ${LIMITS.max_rank}`);
    }
    const bad = firstBad(value, (d) => isInt(d) && d >= 0);
    if (bad >= 0) {
      throw nodeError('VALIDATION', node, `${name} ${show(value)} has a dimension that is not ` +
        `an integer >= 0: ${show(value[bad])}`);
    }
    const count = numel(value);
    if (count > LIMITS.max_elements) {
      throw nodeError('LIMIT', node, `${name} ${formatShape(value)} has ${count} elements, ` +
        `more than max_elements ${LIMITS.max_elements}`);
    }
    return [...value];
  },

  data(value, node, name, attrs) {
    return toTypedData(value, attrs.dtype, attrs.shape, node, name);
  },

  dtype(value, node, name, attrs) {
    if (typeof value !== 'string' || !DTYPE_NAMES.includes(value)) {
      throw nodeError('VALIDATION', node, `${name} must be one of ${DTYPE_NAMES.join(', ')}, ` +
        `got ${show(value)}`);
    }
    // a block-quantized input is [N, K] with whole blocks along K (the shape is checked first)
    const problem = attrs.shape ? blockShapeProblem(value, attrs.shape) : null;
    if (problem) throw nodeError('VALIDATION', node, problem);
    return value;
  },

  // an integer in the row's [min, max] (matmul_fixed's frac_bits)
  int(value, node, name, _attrs, spec) {
    if (!isInt(value) || value < spec.min || value > spec.max) {
      throw nodeError('VALIDATION', node, `${name} must be an integer in ${spec.min}..${spec.max}, ` +
        `got ${show(value)}`);
    }
    return value;
  },

  // a required axis (the selection ops): an integer in -max_rank..max_rank-1, checked against
  // the operand's rank by the shape rule
  dim(value, node, name, attrs) {
    return ATTR_CHECKS.int(value, node, name, attrs, { min: -LIMITS.max_rank, max: LIMITS.max_rank - 1 });
  },

  float(value, node, name) {
    if (name === 'value') return scalarValue(value, node, name);
    // Float attributes are float32 values (every GPU and wasm path uses them so); rounding
    // here gives every backend the same number.
    if (typeof value !== 'number' || !Number.isFinite(Math.fround(value))) {
      throw nodeError('VALIDATION', node, `${name} must be a finite float32 number, got ${show(value)}`);
    }
    return Math.fround(value);
  },

  // seeds (hash_uniform, dropout): an integer a uint32 holds
  uint32(value, node, name) {
    if (!isInt(value) || value < 0 || value > 0xffffffff) {
      throw nodeError('VALIDATION', node, `${name} must be an integer in 0..4294967295, got ` +
        `${show(value)}`);
    }
    return value;
  },

  // dropout's p: a float32 in [0, 1) (checked after rounding: 0.99999999 rounds to 1)
  probability(value, node, name) {
    const p = typeof value === 'number' ? Math.fround(value) : NaN;
    if (!(p >= 0 && p < 1)) {
      throw nodeError('VALIDATION', node, `${name} must be a float32 number in [0, 1), got ` +
        `${show(value)}`);
    }
    return p;
  },

  // clamp's bounds: a float attribute where null means "no bound"
  optional_float(value, node, name, attrs) {
    return value === null ? null : ATTR_CHECKS.float(value, node, name, attrs);
  },

  axis(value, node, name) {
    if (value !== null && !isInt(value)) {
      throw nodeError('VALIDATION', node, `${name} must be an integer or null, got ${show(value)}`);
    }
    return value;
  },

  bool(value, node, name) {
    if (typeof value !== 'boolean') {
      throw nodeError('VALIDATION', node, `${name} must be a boolean, got ${show(value)}`);
    }
    return value;
  },

  perm(value, node, name) {
    if (!Array.isArray(value) || firstBad(value, isInt) >= 0) {
      throw nodeError('VALIDATION', node, `${name} must be a list of integers, got ${show(value)}`);
    }
    return [...value];
  },

  // full.value's form without rounding (pad: an int32 pad value must stay exact)
  scalar(value, node, name) {
    return scalarValue(value, node, name);
  },

  // slice / slice_scatter: one [start, stop, step] per axis; start/stop null or an integer,
  // step null (1) or a non-zero integer
  slices(value, node, name) {
    const entry = (e) => Array.isArray(e) && e.length === 3 &&
      firstBad(e, (x) => x === null || x === undefined || isInt(x)) < 0 && e[2] !== 0;
    if (!Array.isArray(value) || firstBad(value, entry) >= 0) {
      throw nodeError('VALIDATION', node, `${name} must be a list of [start, stop, step] ` +
        `(integers or null, step not 0), got ${show(value)}`);
    }
    return value.map((e) => e.map((x) => (x === undefined ? null : x)));
  },

  // pad: one [before, after] per axis, integers >= 0
  pad_widths(value, node, name) {
    const entry = (e) => Array.isArray(e) && e.length === 2 &&
      firstBad(e, (x) => isInt(x) && x >= 0) < 0;
    if (!Array.isArray(value) || firstBad(value, entry) >= 0) {
      throw nodeError('VALIDATION', node, `${name} must be a list of [before, after] ` +
        `(integers >= 0), got ${show(value)}`);
    }
    return value.map((e) => [...e]);
  },

  // the v6 window ops' strides, dilations, kernel, resize's size: [h, w], integers >= 1
  pair(value, node, name) {
    if (!Array.isArray(value) || value.length !== 2 || firstBad(value, (d) => isInt(d) && d >= 1) >= 0) {
      throw nodeError('VALIDATION', node, `${name} must be a list of 2 integers >= 1, got ${show(value)}`);
    }
    return [...value];
  },

  // the v6 window ops' padding: [top, left, bottom, right], integers >= 0 (ONNX's pads order)
  pads4(value, node, name) {
    if (!Array.isArray(value) || value.length !== 4 || firstBad(value, (d) => isInt(d) && d >= 0) >= 0) {
      throw nodeError('VALIDATION', node, `${name} must be a list of 4 integers >= 0 ` +
        `[top, left, bottom, right], got ${show(value)}`);
    }
    return [...value];
  },

  // one of the row's values (resize's modes): anything else is refused by name
  choice(value, node, name, _attrs, spec) {
    if (typeof value !== 'string' || !spec.values.includes(value)) {
      throw nodeError('VALIDATION', node, `${name} must be one of ${spec.values.join(', ')}, ` +
        `got ${show(value)}`);
    }
    return value;
  },

  reshape(value, node, name) {
    if (!Array.isArray(value) || firstBad(value, (d) => isInt(d) && d >= -1) >= 0) {
      throw nodeError('VALIDATION', node, `${name} must be a list of integers >= 0 or -1, got ` +
        `${show(value)}`);
    }
    if (value.filter((d) => d === -1).length > 1) {
      throw nodeError('VALIDATION', node, `${name} ${show(value)} has more than one -1`);
    }
    if (value.length > LIMITS.max_rank) {
      throw nodeError('LIMIT', node, `${name} ${show(value)} has rank ${value.length}, more ` +
        `than max_rank ${LIMITS.max_rank}`);
    }
    return [...value];
  },

  // the student wgsl op's attributes (wgsl-op.mjs)
  ...WGSL_ATTR_CHECKS,
};

/** `full.value`: any number, or "nan"/"inf"/"-inf". */
function scalarValue(value, node, name) {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && NON_FINITE.has(value)) return NON_FINITE.get(value);
  throw nodeError('VALIDATION', node, `${name} must be a number or "nan", "inf", "-inf", got ` +
    `${show(value)}`);
}

// ---------------------------------------------------------------- step 2: nodes

/**
 * @param {unknown} raw @param {number} index @param {Map<number, number>} seen id -> index
 * @returns {CheckedNode}
 */
function checkNode(raw, index, seen) {
  if (!isObject(raw)) throw invalid(`nodes[${index}] must be an object, got ${show(raw)}`);
  if (!Object.hasOwn(raw, 'id')) throw invalid(`nodes[${index}] has no id`);
  const { id } = raw;
  if (!isId(id)) {
    throw invalid(`nodes[${index}]: id must be an integer >= 0 and <= 2^53-1, got ` +
      `${show(id)}`);
  }
  const label = { id, op: typeof raw.op === 'string' ? raw.op : show(raw.op) };
  if (seen.has(id)) {
    throw nodeError('VALIDATION', label, `duplicate id ${id} (also nodes[${seen.get(id)}])`);
  }
  seen.set(id, index);
  const spec = typeof raw.op === 'string' ? opSpec(raw.op) : undefined;
  if (!spec) throw nodeError('VALIDATION', label, `unknown op ${show(raw.op)}`);
  // a variadic list field first (docs/protocol.md), then the fixed operands (conv2d: bias, a, w)
  const listed = spec.variadic ? variadicOperands(raw, spec, label) : [];
  const fixed = spec.operands.map((name) => {
    if (!Object.hasOwn(raw, name)) throw nodeError('VALIDATION', label, `missing operand ${name}`);
    if (!isId(raw[name])) {
      throw nodeError('VALIDATION', label, `operand ${name} must be an integer node id, got ` +
        `${show(raw[name])}`);
    }
    return raw[name];
  });
  const operands = [...listed, ...fixed];
  const known = new Set(['id', 'op', ...spec.operands, ...(spec.variadic ? [spec.variadic] : []),
    ...Object.keys(spec.attrs)]);
  const extra = Object.keys(raw).find((k) => !known.has(k));
  if (extra !== undefined) throw nodeError('VALIDATION', label, `unknown field "${extra}"`);
  const attrs = checkAttrs(raw, spec, label);
  /** @type {CheckedNode} */
  const node = { id, op: label.op, operands, attrs, shape: [], dtype: '' };
  if (Object.hasOwn(attrs, 'data')) {
    node.data = attrs.data;
    delete attrs.data;
  }
  return node;
}

/**
 * A variadic operand (docs/protocol.md "Variadic operands": the wgsl op's `inputs`, concat's
 * `tensors`): a list of node ids, which become the operands; `variadic_count` bounds its length.
 * @param {Record<string, unknown>} raw @param {import('./optable.mjs').OpSpec} spec
 * @param {{id: number, op: string}} label
 */
function variadicOperands(raw, spec, label) {
  const name = spec.variadic;
  const list = raw[name];
  if (!Object.hasOwn(raw, name)) throw nodeError('VALIDATION', label, `missing operand ${name}`);
  if (!Array.isArray(list) || firstBad(list, isId) >= 0) {
    throw nodeError('VALIDATION', label, `operand ${name} must be a list of integer node ids, ` +
      `got ${show(list)}`);
  }
  const count = spec.variadic_count;
  if (count && (list.length < count.min || list.length > count.max)) {
    throw nodeError('VALIDATION', label, `operand ${name} must be a list of ${count.min} to ` +
      `${count.max} node ids (it has ${list.length})`);
  }
  return [...list];
}

/**
 * Attributes in op-table order; defaults filled (arrays copied). An attribute present with the
 * value undefined is null (Pyodide turns Python's None into undefined; natively it is None):
 * refused where null is, accepted where null is (axis, clamp's bounds).
 */
function checkAttrs(raw, spec, label) {
  /** @type {Record<string, any>} */
  const attrs = {};
  for (const [name, attr] of Object.entries(spec.attrs)) {
    if (!Object.hasOwn(raw, name)) {
      if (attr.required) throw nodeError('VALIDATION', label, `missing attribute "${name}"`);
      if (Object.hasOwn(attr, 'default')) {
        attrs[name] = attr.type === 'float' ? Math.fround(attr.default) : structuredClone(attr.default);
      }
      continue;
    }
    const check = ATTR_CHECKS[attr.type];
    attrs[name] = check(raw[name] === undefined ? null : raw[name], label, name, attrs, attr);
  }
  return attrs;
}

// ---------------------------------------------------------------- step 3: structure

/** @param {CheckedNode[]} nodes @param {Map<number, CheckedNode>} byId */
function checkOperandsExist(nodes, byId) {
  for (const node of nodes) {
    const names = operandNames(opSpec(node.op), node.operands.length);
    node.operands.forEach((ref, i) => {
      if (!byId.has(ref)) {
        throw nodeError('VALIDATION', node, `dangling operand ${names[i]} = ${ref}: no node ` +
          'has that id');
      }
    });
  }
}

/** @param {unknown[]} outputs @param {Map<number, CheckedNode>} byId */
function checkOutputs(outputs, byId) {
  const names = new Set();
  return outputs.map((out, i) => {
    if (!isObject(out)) throw invalid(`outputs[${i}] must be an object {name, id}, got ${show(out)}`);
    const extra = Object.keys(out).find((k) => k !== 'name' && k !== 'id');
    if (extra !== undefined) throw invalid(`outputs[${i}] has unknown field "${extra}"`);
    if (typeof out.name !== 'string' || out.name === '') {
      throw invalid(`outputs[${i}]: name must be a non-empty string, got ${show(out.name)}`);
    }
    if (RESERVED_NAMES.includes(out.name)) {
      throw invalid(`outputs[${i}]: the name '${out.name}' is reserved (a JS object cannot ` +
        'hold it as a key)');
    }
    if (!isId(out.id)) {
      throw invalid(`output "${out.name}": id must be an integer node id, got ${show(out.id)}`);
    }
    if (!byId.has(out.id)) {
      throw invalid(`dangling output "${out.name}": no node has id ${out.id}`);
    }
    if (names.has(out.name)) throw invalid(`duplicate output name "${out.name}"`);
    names.add(out.name);
    return { name: out.name, id: out.id };
  });
}

/** A binary min-heap of list positions: the ready node listed first comes out first. */
class MinHeap {
  constructor() { /** @type {number[]} */ this.items = []; }
  get size() { return this.items.length; }
  /** @param {number} v */
  push(v) {
    const a = this.items;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p] <= v) break;
      a[i] = a[p];
      i = p;
    }
    a[i] = v;
  }
  pop() {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0) {
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= a.length) break;
        if (c + 1 < a.length && a[c + 1] < a[c]) c++;
        if (a[c] >= last) break;
        a[i] = a[c];
        i = c;
      }
      a[i] = last;
    }
    return top;
  }
}

/**
 * Topological order of all nodes (repeatedly the first listed node whose operands have all
 * run), or a VALIDATION error naming a node on a cycle.
 * @param {CheckedNode[]} nodes @param {Map<number, number>} indexOf id -> list position
 * @returns {number[]} list positions
 */
function topologicalOrder(nodes, indexOf) {
  const waiting = nodes.map((n) => n.operands.length);
  /** @type {number[][]} */
  const users = nodes.map(() => []);
  nodes.forEach((n, i) => n.operands.forEach((ref) => users[indexOf.get(ref)].push(i)));
  const ready = new MinHeap();
  waiting.forEach((w, i) => { if (w === 0) ready.push(i); });
  const order = [];
  while (ready.size > 0) {
    const i = ready.pop();
    order.push(i);
    for (const u of users[i]) if (--waiting[u] === 0) ready.push(u);
  }
  if (order.length < nodes.length) throw cycleError(nodes, indexOf, waiting);
  return order;
}

/**
 * Name the first node in list order that lies on a cycle (a strongly connected component of
 * more than one node, or a node that is its own operand), among the nodes that could not run.
 * @param {CheckedNode[]} nodes @param {Map<number, number>} indexOf @param {number[]} waiting
 */
function cycleError(nodes, indexOf, waiting) {
  const onCycle = nodesOnCycles(nodes, indexOf, waiting);
  const first = nodes.findIndex((_, i) => onCycle.has(i));
  return nodeError('VALIDATION', nodes[first], 'is on a cycle of operands');
}

/**
 * List positions on cycles: Tarjan's strongly connected components, iterative, restricted to
 * the nodes that could not run (every cycle lies among them).
 */
function nodesOnCycles(nodes, indexOf, waiting) {
  const succ = nodes.map((n) => n.operands.map((ref) => indexOf.get(ref)));
  const index = new Int32Array(nodes.length).fill(-1);
  const low = new Int32Array(nodes.length);
  const onStack = new Uint8Array(nodes.length);
  const stack = [];
  const result = new Set();
  let counter = 0;
  for (let root = 0; root < nodes.length; root++) {
    if (waiting[root] === 0 || index[root] >= 0) continue;
    const work = [[root, 0]];
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const v = frame[0];
      if (frame[1] === 0 && index[v] < 0) {
        index[v] = low[v] = counter++;
        stack.push(v);
        onStack[v] = 1;
      }
      let descended = false;
      while (frame[1] < succ[v].length) {
        const w = succ[v][frame[1]++];
        if (waiting[w] === 0) continue;
        if (index[w] < 0) {
          work.push([w, 0]);
          descended = true;
          break;
        }
        if (onStack[w]) low[v] = Math.min(low[v], index[w]);
      }
      if (descended) continue;
      work.pop();
      if (low[v] === index[v]) {
        const component = [];
        let w;
        do {
          w = stack.pop();
          onStack[w] = 0;
          component.push(w);
        } while (w !== v);
        if (component.length > 1 || succ[v].includes(v)) component.forEach((c) => result.add(c));
      }
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low[parent] = Math.min(low[parent], low[v]);
      }
    }
  }
  return result;
}

// ---------------------------------------------------------------- step 4: shapes

/** @param {CheckedNode[]} nodes @param {number[]} topo @param {Map<number, CheckedNode>} byId */
function inferShapes(nodes, topo, byId) {
  let total = 0;
  for (const i of topo) {
    const node = nodes[i];
    const ruleName = opSpec(node.op).shape_rule;
    const shapes = node.operands.map((ref) => byId.get(ref).shape);
    node.shape = Object.hasOwn(NODE_SHAPE_RULES, ruleName)
      ? NODE_SHAPE_RULES[ruleName](node, node.operands.map((ref) => byId.get(ref)))
      : SHAPE_RULES[ruleName]({ node, shapes, attrs: node.attrs });
    const count = numel(node.shape);
    if (count > LIMITS.max_elements) {
      throw nodeError('LIMIT', node, `result ${formatShape(node.shape)} has ${count} elements, ` +
        `more than max_elements ${LIMITS.max_elements}`);
    }
    total += count;
    if (total > LIMITS.max_total_elements) {
      throw nodeError('LIMIT', node, `the graph's tensors exceed max_total_elements ` +
        `${LIMITS.max_total_elements} at this node`);
    }
  }
}

// ---------------------------------------------------------------- step 5: dtypes

/** @param {CheckedNode[]} nodes @param {number[]} topo @param {Map<number, CheckedNode>} byId */
function inferDtypes(nodes, topo, byId) {
  for (const i of topo) {
    const node = nodes[i];
    const spec = opSpec(node.op);
    if (Object.hasOwn(NODE_DTYPE_RULES, spec.shape_rule)) {
      node.dtype = NODE_DTYPE_RULES[spec.shape_rule](node, node.operands.map((ref) => byId.get(ref)));
      continue;
    }
    const dtypes = node.operands.map((ref) => byId.get(ref).dtype);
    node.dtype = resultDtype(node, spec, dtypes);
  }
}

/**
 * Block-quantized tensors are weights read by matmul_q, dequantize and dequantize_rows only:
 * no output is one (so no backend reads blocks back). @param {{name: string, id: number}[]} outputs
 * @param {Map<number, CheckedNode>} byId
 */
function checkOutputDtypes(outputs, byId) {
  for (const o of outputs) {
    const node = byId.get(o.id);
    if (blockOf(node.dtype)) {
      throw nodeError('VALIDATION', node, `output "${o.name}" is a ${node.dtype} tensor; only ` +
        'matmul_q, dequantize and dequantize_rows read one (output its dequantize)');
    }
  }
}

// ---------------------------------------------------------------- step 6: version

/** One-element tensor of rank <= 1: a scalar in version 1. @param {Shape} s */
const isScalarLike = (s) => s.length <= 1 && numel(s) === 1;

/**
 * When an op's use of a feature needs a later version than the op (`features` in the op table:
 * feature name -> the version that allows it).
 * @type {Record<string, (shapes: Shape[], raw: Record<string, any>) => boolean>}
 */
const FEATURE_USED = {
  broadcast: ([a, b]) => !sameShape(a, b) && !isScalarLike(a) && !isScalarLike(b),
  batched: (shapes) => shapes.some((s) => s.length > 2),
  axis: (_, attrs) => attrs.axis !== null || attrs.keepdim === true,
};

/**
 * When a node uses a feature of the table's `tensor_features` (any op): its result shape, or an
 * axis attribute on a rank-0 operand a.
 * @type {Record<string, (node: CheckedNode, shapes: Shape[]) => boolean>}
 */
const TENSOR_FEATURE_USED = {
  high_rank: (node) => node.shape.length > 4,
  zero_size: (node) => node.shape.includes(0),
  scalar_axis: (node, shapes) => node.attrs.axis != null && shapes[0]?.length === 0,
};
const TENSOR_FEATURE_SINCE = Object.entries(TENSOR_FEATURES).map(([name, { since }]) => [name, since]);

/**
 * The version a node needs and why: the highest of its op's `since`, its dtype's `since`, the
 * versions of the features it uses and of its tensor features; the reason is the first of
 * those (op, dtype, features, tensor features in table order) that reaches it.
 * @param {CheckedNode} node @param {Map<number, CheckedNode>} byId
 * @returns {{need: number, why: () => string}}
 */
export function versionNeeded(node, byId) {
  // reasons as [version, say]: the message is made only for the one reported (a long graph
  // checks every node, and most need nothing past their op)
  const spec = opSpec(node.op);
  const shapes = node.operands.map((ref) => byId.get(ref).shape);
  const reasons = [[spec.since, () => `${node.op} is a version ${spec.since} op`]];
  const dtypeSince = DTYPES[node.dtype].since;
  reasons.push([dtypeSince, () => `its dtype ${node.dtype} is a version ${dtypeSince} dtype`]);
  const feature = (/** @type {string} */ name, /** @type {number} */ version) =>
    reasons.push([version, () => `its use of ${name} is a version ${version} feature`]);
  for (const [name, version] of Object.entries(spec.features ?? {})) {
    if (FEATURE_USED[name](shapes, node.attrs)) feature(name, version);
  }
  for (const [name, since] of TENSOR_FEATURE_SINCE) {
    if (TENSOR_FEATURE_USED[name](node, shapes)) feature(name, since);
  }
  let need = 0;
  for (const [v] of reasons) need = Math.max(need, v);
  return { need, why: () => reasons.find(([v]) => v === need)[1]() };
}

/** @param {CheckedNode[]} nodes @param {number} declared @param {Map<number, CheckedNode>} byId */
function checkVersion(nodes, declared, byId) {
  let required = 1;
  for (const node of nodes) {
    const { need, why } = versionNeeded(node, byId);
    if (need > declared) {
      throw new GpuLabError('UNSUPPORTED_VERSION', `node ${node.id} (${node.op}): needs ` +
        `version ${need} (${why()}), the graph declares version ${declared}`, node.id);
    }
    required = Math.max(required, need);
  }
  return required;
}

// ---------------------------------------------------------------- the whole check

/**
 * Ids the outputs depend on.
 * @param {{id: number}[]} outputs @param {Map<number, CheckedNode>} byId
 */
function liveIds(outputs, byId) {
  const live = new Set();
  const stack = outputs.map((o) => o.id);
  while (stack.length > 0) {
    const id = stack.pop();
    if (live.has(id)) continue;
    live.add(id);
    stack.push(...byId.get(id).operands);
  }
  return live;
}

/**
 * Validate a graph (plain data) and return the checked graph, or throw a GpuLabError with the
 * first problem in the order of docs/protocol.md.
 * @param {unknown} graph
 * @returns {CheckedGraph}
 */
export function validateGraph(graph) {
  checkTopLevel(graph);
  const g = /** @type {{version: number, nodes: unknown[], outputs: unknown[]}} */ (graph);
  const indexOf = new Map();
  const nodes = g.nodes.map((raw, i) => checkNode(raw, i, indexOf));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  checkOperandsExist(nodes, byId);
  const outputs = checkOutputs(g.outputs, byId);
  const topo = topologicalOrder(nodes, indexOf);
  inferShapes(nodes, topo, byId);
  inferDtypes(nodes, topo, byId);
  checkOutputDtypes(outputs, byId);
  const requiredVersion = checkVersion(nodes, g.version, byId);
  checkValues(nodes, byId);
  const live = liveIds(outputs, byId);
  const order = topo.filter((i) => live.has(nodes[i].id)).map((i) => nodes[i].id);
  return { version: g.version, requiredVersion, nodes, order, outputs, byId };
}
