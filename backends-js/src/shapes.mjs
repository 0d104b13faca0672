// Shape inference, one function per `shape_rule` of the op table (docs/protocol.md "Shape rules").
// A rule gets the node, its operand shapes in op-table order and its attributes (already
// type-checked), returns the result shape, and may normalize attributes in place (axis made
// non-negative, reshape's -1 resolved). A new op with an existing rule needs nothing here.
import { nodeError } from './errors.mjs';
import { LIMITS, opSpec } from './optable.mjs';
import { SELECT_RULES } from './shapes-select.mjs';
import { CONV_RULES } from './shapes-conv.mjs';

/** @typedef {number[]} Shape */
/** @typedef {{node: {id: number, op: string}, shapes: Shape[], attrs: Record<string, any>}} RuleContext */

/** @param {Shape} shape */
export function numel(shape) {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** @param {Shape} shape */
export function formatShape(shape) {
  return `[${shape.join(', ')}]`;
}

/** @param {Shape} a @param {Shape} b */
export function sameShape(a, b) {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * NumPy broadcasting of two shapes, or null when they do not broadcast.
 * @param {Shape} a @param {Shape} b @returns {Shape|null}
 */
export function broadcastShapes(a, b) {
  const rank = Math.max(a.length, b.length);
  const out = new Array(rank);
  for (let i = 1; i <= rank; i++) {
    const da = i <= a.length ? a[a.length - i] : 1;
    const db = i <= b.length ? b[b.length - i] : 1;
    if (da !== db && da !== 1 && db !== 1) return null;
    out[rank - i] = da === 1 ? db : da; // (an axis of 0 against 1 is 0, as NumPy)
  }
  return out;
}

/** Row-major strides. @param {Shape} shape */
export function stridesOf(shape) {
  const s = new Array(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

/**
 * Normalize an axis for a tensor of `rank`, or return null when it is out of range. A rank-0
 * tensor takes axis 0 or -1 (as PyTorch: its one element is one axis of length 1).
 * @param {number} axis @param {number} rank
 */
export function normalizeAxis(axis, rank) {
  const r = Math.max(rank, 1);
  if (axis < -r || axis >= r) return null;
  return axis < 0 ? axis + r : axis;
}

/** The range message of an axis: "allowed -2..1" (rank 0: -1..0). @param {number} rank */
export function axisRange(rank) {
  const r = Math.max(rank, 1);
  return `allowed ${-r}..${r - 1}`;
}

/** @param {RuleContext} ctx @param {string} detail */
function fail(ctx, detail) {
  return nodeError('VALIDATION', ctx.node, detail);
}

/** "operand a [2, 3], operand b [4]" for messages. @param {RuleContext} ctx @param {string[]} names */
function describe(ctx, names) {
  return names.map((n, i) => `${n} ${formatShape(ctx.shapes[i])}`).join(', ');
}

/** @param {RuleContext} ctx @param {number} count */
function requireEqual(ctx, count) {
  const names = ['a', 'b', 'c'].slice(0, count);
  for (let i = 1; i < count; i++) {
    if (!sameShape(ctx.shapes[0], ctx.shapes[i])) {
      throw fail(ctx, `operand shapes must be equal, got ${describe(ctx, names)}`);
    }
  }
}

/** The operand `counter` (at position i): one element, rank <= 1. @param {RuleContext} ctx @param {number} i */
function requireCounter(ctx, i) {
  const c = ctx.shapes[i];
  if (c.length > 1 || numel(c) !== 1) {
    throw fail(ctx, `operand counter must hold one element with rank <= 1, got counter ` +
      `${formatShape(c)}`);
  }
}

/** @param {RuleContext} ctx @param {string} [attr] */
function requireAxis(ctx, attr = 'axis') {
  const rank = ctx.shapes[0].length;
  const axis = normalizeAxis(ctx.attrs[attr], rank);
  if (axis === null) {
    throw fail(ctx, `axis ${ctx.attrs[attr]} is out of range for a ${formatShape(ctx.shapes[0])} ` +
      `(${axisRange(rank)})`);
  }
  ctx.attrs[attr] = axis;
  return axis;
}

/** @type {Record<string, (ctx: RuleContext) => Shape>} */
export const SHAPE_RULES = {
  from_attr(ctx) {
    return [...ctx.attrs.shape];
  },

  same(ctx) {
    return [...ctx.shapes[0]];
  },

  same_ab(ctx) {
    requireEqual(ctx, 2);
    return [...ctx.shapes[0]];
  },

  same_ab_rank2(ctx) {
    requireEqual(ctx, 2);
    if (ctx.shapes[0].length !== 2) {
      throw fail(ctx, `operands must have rank 2, got ${describe(ctx, ['a', 'b'])}`);
    }
    return [...ctx.shapes[0]];
  },

  broadcast(ctx) {
    const out = broadcastShapes(ctx.shapes[0], ctx.shapes[1]);
    if (out === null) {
      throw fail(ctx, `operand shapes do not broadcast: ${describe(ctx, ['a', 'b'])}`);
    }
    if (out.length > LIMITS.max_rank) {
      throw fail(ctx, `broadcast rank ${out.length} exceeds ${LIMITS.max_rank}`);
    }
    return out;
  },

  // where(cond, a, b): the three operands broadcast together
  broadcast3(ctx) {
    const ab = broadcastShapes(ctx.shapes[1], ctx.shapes[2]);
    const out = ab && broadcastShapes(ctx.shapes[0], ab);
    if (out === null) {
      throw fail(ctx, `operand shapes do not broadcast: ${describe(ctx, ['cond', 'a', 'b'])}`);
    }
    return out;
  },

  // hash_uniform: the shape attribute; the counter holds one element
  counter_shape(ctx) {
    requireCounter(ctx, 0);
    return [...ctx.attrs.shape];
  },

  // dropout(a, counter): shape of a; the counter holds one element
  same_counter(ctx) {
    requireCounter(ctx, 1);
    return [...ctx.shapes[0]];
  },

  transpose(ctx) {
    const a = ctx.shapes[0];
    if (a.length < 2) throw fail(ctx, `transpose needs rank >= 2, got a ${formatShape(a)}`);
    const out = [...a];
    out[a.length - 2] = a[a.length - 1];
    out[a.length - 1] = a[a.length - 2];
    return out;
  },

  permute(ctx) {
    const a = ctx.shapes[0];
    const dims = ctx.attrs.dims;
    const seen = new Array(a.length).fill(false);
    const ok = dims.length === a.length &&
      dims.every((d) => d >= 0 && d < a.length && !seen[d] && (seen[d] = true));
    if (!ok) {
      throw fail(ctx, `dims [${dims.join(', ')}] is not a permutation of 0..${a.length - 1} ` +
        `for a ${formatShape(a)}`);
    }
    return dims.map((d) => a[d]);
  },

  reshape(ctx) {
    const a = ctx.shapes[0];
    const target = ctx.attrs.shape;
    const total = numel(a);
    const hole = target.indexOf(-1);
    let known = 1;
    for (const d of target) if (d !== -1) known *= d;
    const resolved = [...target];
    if (hole >= 0 && known === 0) {
      // PyTorch's rule: with a 0 beside it, -1 could be any size
      throw fail(ctx, `cannot reshape a ${formatShape(a)} to ${formatShape(target)}: with a 0 ` +
        'among the sizes, -1 could be any size');
    }
    if (hole >= 0) {
      if (total % known !== 0) {
        throw fail(ctx, `cannot reshape a ${formatShape(a)} (${total} elements) to ` +
          `${formatShape(target)}`);
      }
      resolved[hole] = total / known;
    } else if (known !== total) {
      throw fail(ctx, `cannot reshape a ${formatShape(a)} (${total} elements) to ` +
        `${formatShape(target)} (${known} elements)`);
    }
    ctx.attrs.shape = resolved;
    return [...resolved];
  },

  matmul(ctx) {
    const [a, b] = ctx.shapes;
    if (a.length < 2 || b.length < 2) {
      throw fail(ctx, `matmul operands need rank >= 2, got ${describe(ctx, ['a', 'b'])}`);
    }
    if (a[a.length - 1] !== b[b.length - 2]) {
      throw fail(ctx, `inner dimensions differ: ${describe(ctx, ['a', 'b'])}`);
    }
    const batch = broadcastShapes(a.slice(0, -2), b.slice(0, -2));
    if (batch === null) {
      throw fail(ctx, `batch axes do not broadcast: ${describe(ctx, ['a', 'b'])}`);
    }
    return [...batch, a[a.length - 2], b[b.length - 1]];
  },

  // a @ b.T with b a block-quantized [N, K] (its input node checked the rank and K)
  matmul_q(ctx) {
    const [a, b] = ctx.shapes;
    if (a.length < 2) throw fail(ctx, `operand a needs rank >= 2, got ${describe(ctx, ['a', 'b'])}`);
    // a b of another dtype reaches this rule before the dtype check (found by the fuzz lane)
    if (b.length !== 2) throw fail(ctx, `operand b must be [N, K], got ${describe(ctx, ['a', 'b'])}`);
    if (a[a.length - 1] !== b[1]) {
      throw fail(ctx, `inner dimensions differ (a @ b.T): ${describe(ctx, ['a', 'b'])}`);
    }
    return [...a.slice(0, -1), b[0]];
  },

  reduce(ctx) {
    const a = ctx.shapes[0];
    if (ctx.attrs.axis !== null) requireAxis(ctx);
    const axis = ctx.attrs.axis;
    const out = axis === null ? (ctx.attrs.keepdim ? a.map(() => 1) : [])
      : ctx.attrs.keepdim ? a.map((d, i) => (i === axis ? 1 : d)) : a.filter((_, i) => i !== axis);
    // a rank-0 tensor's one axis is the whole tensor
    const reduced = axis === null || a.length === 0 ? numel(a) : a[axis];
    if (reduced === 0 && numel(out) > 0 && opSpec(ctx.node.op).over_empty === 'refused') {
      throw fail(ctx, `${ctx.node.op} over no element is undefined: ` +
        (axis === null ? `a ${formatShape(a)} is empty` : `axis ${axis} of a ${formatShape(a)} is empty`));
    }
    return out;
  },

  same_axis(ctx) {
    // null stands for the default, the last axis (the Python twin does the same).
    if (ctx.attrs.axis === null) ctx.attrs.axis = -1;
    requireAxis(ctx);
    return [...ctx.shapes[0]];
  },

  cross_entropy(ctx) {
    requireEqual(ctx, 2);
    if (ctx.shapes[0].length !== 2) {
      throw fail(ctx, `operands must have rank 2, got ${describe(ctx, ['a', 'b'])}`);
    }
    return [];
  },

  adam_update(ctx) {
    requireEqual(ctx, 3);
    const t = ctx.shapes[3];
    if (t.length > 1 || numel(t) !== 1) {
      throw fail(ctx, `operand t must hold one element with rank <= 1, got t ${formatShape(t)}`);
    }
    return [...ctx.shapes[0]];
  },

  life(ctx) {
    const a = ctx.shapes[0];
    if (a.length !== 2) throw fail(ctx, `life needs a rank-2 grid, got a ${formatShape(a)}`);
    return [...a];
  },

  // the v4 selection ops (slice, gather, concat, pad, ...)
  ...SELECT_RULES,
  // the v6 window ops (conv2d, max_pool2d, avg_pool2d, resize)
  ...CONV_RULES,
};
