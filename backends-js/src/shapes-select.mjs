// Shape rules of the protocol-v4 selection ops (slice, slice_scatter, index_select, gather,
// index_add, scatter_add, concat, pad): docs/protocol.md "Shape rules". Twin of
// pylib/gpulab/shapes_select.py, message for message. shapes.mjs spreads SELECT_RULES into its
// table, so a rule here is looked up like any other.
import { nodeError } from './errors.mjs';

/** @typedef {number[]} Shape */
/** @typedef {{node: {id: number, op: string}, shapes: Shape[], attrs: Record<string, any>}} RuleContext */

/** @param {Shape} shape */
const fmt = (shape) => `[${shape.join(', ')}]`;

/** @param {RuleContext} ctx @param {string} detail */
const fail = (ctx, detail) => nodeError('VALIDATION', ctx.node, detail);

/**
 * Python's slice.indices(n) and the selected count, for one [start, stop, step] entry:
 * negative start/stop count from the end, out-of-range ones clamp, null means "from the
 * beginning/to the end" in the step's direction.
 * @param {(number|null)[]} entry @param {number} n
 * @returns {{start: number, stop: number, step: number, count: number}}
 */
export function sliceIndices([start, stop, step], n) {
  const s = step ?? 1;
  const lo = s < 0 ? -1 : 0;
  const hi = s < 0 ? n - 1 : n;
  const clampEnd = (v, dflt) => {
    if (v === null) return dflt;
    const w = v < 0 ? v + n : v;
    return Math.min(Math.max(w, lo), hi);
  };
  const a = clampEnd(start, s < 0 ? hi : lo);
  const b = clampEnd(stop, s < 0 ? lo : hi);
  const count = s < 0 ? Math.max(0, Math.ceil((a - b) / -s)) : Math.max(0, Math.ceil((b - a) / s));
  return { start: a, stop: b, step: s, count };
}

/**
 * slices checked against `a` and normalized to [start, stop, step] that mean the same on a
 * second validation: start absolute, stop absolute or null (a negative step run to index 0).
 * @param {RuleContext} ctx @returns {Shape} the slice's shape
 */
function sliceShape(ctx) {
  const a = ctx.shapes[0];
  const slices = ctx.attrs.slices;
  if (slices.length !== a.length) {
    throw fail(ctx, `slices has ${slices.length} entries, a ${fmt(a)} has rank ${a.length}`);
  }
  const out = [];
  ctx.attrs.slices = slices.map((entry, k) => {
    const { start, stop, step, count } = sliceIndices(entry, a[k]);
    out.push(count);
    return [start, stop < 0 ? null : stop, step];
  });
  return out;
}

/**
 * The `axis` attribute normalized against operand a (a rank-0 a takes 0 or -1, as PyTorch).
 * @param {RuleContext} ctx
 */
function indexAxis(ctx) {
  const a = ctx.shapes[0];
  const rank = Math.max(a.length, 1);
  const axis = ctx.attrs.axis;
  if (axis < -rank || axis >= rank) {
    throw fail(ctx, `axis ${axis} is out of range for a ${fmt(a)} (allowed ${-rank}..${rank - 1})`);
  }
  ctx.attrs.axis = axis < 0 ? axis + rank : axis;
  return ctx.attrs.axis;
}

/** @param {Shape} s */
const numel = (s) => s.reduce((p, d) => p * d, 1);

/** The extent of a's axis (a rank-0 a: its one element). @param {Shape} a @param {number} axis */
const extentOf = (a, axis) => (a.length === 0 ? 1 : a[axis]);

/**
 * An index into an empty axis is never in range: a non-empty idx along an axis of size 0 is
 * refused here, whatever its values (fed indices included).
 * @param {RuleContext} ctx @param {number} axis @param {Shape} idx
 */
function requireIndexable(ctx, axis, idx) {
  const a = ctx.shapes[0];
  if (extentOf(a, axis) === 0 && numel(idx) > 0) {
    throw fail(ctx, `axis ${axis} of a ${fmt(a)} is empty: no index of idx ${fmt(idx)} is in range`);
  }
}

/**
 * The idx of index_select / index_add: rank 1, or for a rank-0 a one element of rank <= 1
 * (PyTorch: an index to a scalar holds one value). @param {RuleContext} ctx @param {Shape} idx
 */
function requireIndexList(ctx, idx) {
  if (ctx.shapes[0].length > 0) {
    requireRank(ctx, 'idx', idx, 1);
  } else if (idx.length > 1 || numel(idx) !== 1) {
    throw fail(ctx, `operand idx must hold one index with rank <= 1 for a rank-0 a, got idx ${fmt(idx)}`);
  }
}

/** @param {RuleContext} ctx @param {string} name @param {Shape} shape @param {number} rank */
function requireRank(ctx, name, shape, rank) {
  if (shape.length !== rank) {
    throw fail(ctx, `operand ${name} must have rank ${rank}, got ${name} ${fmt(shape)}`);
  }
}

/** idx's extent fits a's on every axis but `axis` (torch.gather / scatter_add). */
function requireWithin(ctx, axis, idx) {
  const a = ctx.shapes[0];
  requireRank(ctx, 'idx', idx, a.length);
  idx.forEach((d, k) => {
    if (k !== axis && d > a[k]) {
      throw fail(ctx, `operand idx ${fmt(idx)} is larger than a ${fmt(a)} on axis ${k}`);
    }
  });
}

/** @param {RuleContext} ctx @param {string} name @param {Shape} got @param {Shape} want @param {string} what */
function requireShape(ctx, name, got, want, what) {
  if (got.length !== want.length || got.some((d, i) => d !== want[i])) {
    throw fail(ctx, `operand ${name} ${fmt(got)} must have ${what} ${fmt(want)}`);
  }
}

/** @type {Record<string, (ctx: RuleContext) => Shape>} */
export const SELECT_RULES = {
  slice: sliceShape,

  slice_scatter(ctx) {
    const want = sliceShape(ctx);
    requireShape(ctx, 'src', ctx.shapes[1], want, "the slice's shape");
    return [...ctx.shapes[0]];
  },

  index_select(ctx) {
    const axis = indexAxis(ctx);
    const idx = ctx.shapes[1];
    requireIndexList(ctx, idx);
    requireIndexable(ctx, axis, idx);
    return ctx.shapes[0].map((d, k) => (k === axis ? idx[0] : d));
  },

  // rows idx of a block-quantized [N, K] (its input node checked the rank and K) -> [M, K]
  dequantize_rows(ctx) {
    const idx = ctx.shapes[1];
    requireRank(ctx, 'a', ctx.shapes[0], 2);
    requireRank(ctx, 'idx', idx, 1);
    requireIndexable(ctx, 0, idx);
    return [idx[0], ctx.shapes[0][1]];
  },

  gather(ctx) {
    const axis = indexAxis(ctx);
    requireWithin(ctx, axis, ctx.shapes[1]);
    requireIndexable(ctx, axis, ctx.shapes[1]);
    return [...ctx.shapes[1]];
  },

  index_add(ctx) {
    const axis = indexAxis(ctx);
    const [a, idx, src] = ctx.shapes;
    requireIndexList(ctx, idx);
    requireShape(ctx, 'src', src, a.map((d, k) => (k === axis ? idx[0] : d)),
      "a's shape with axis replaced by len(idx):");
    requireIndexable(ctx, axis, idx);
    return [...a];
  },

  scatter_add(ctx) {
    const axis = indexAxis(ctx);
    const [a, idx, src] = ctx.shapes;
    requireWithin(ctx, axis, idx);
    requireShape(ctx, 'src', src, idx, "idx's shape");
    requireIndexable(ctx, axis, idx);
    return [...a];
  },

  concat(ctx) {
    if (ctx.shapes[0].length === 0) {
      throw fail(ctx, `operand tensors[0] ${fmt(ctx.shapes[0])} has rank 0; concat needs rank >= 1`);
    }
    const axis = indexAxis(ctx);
    const first = ctx.shapes[0];
    let total = 0;
    ctx.shapes.forEach((s, i) => {
      const same = s.length === first.length && s.every((d, k) => k === axis || d === first[k]);
      if (!same) {
        throw fail(ctx, `operand tensors[${i}] ${fmt(s)} does not match tensors[0] ` +
          `${fmt(first)} except along axis ${axis}`);
      }
      total += s[axis];
    });
    return first.map((d, k) => (k === axis ? total : d));
  },

  pad(ctx) {
    const a = ctx.shapes[0];
    const widths = ctx.attrs.widths;
    if (widths.length !== a.length) {
      throw fail(ctx, `widths has ${widths.length} entries, a ${fmt(a)} has rank ${a.length}`);
    }
    return a.map((d, k) => d + widths[k][0] + widths[k][1]);
  },
};
