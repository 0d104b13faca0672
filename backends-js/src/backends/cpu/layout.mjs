// Kernels that move elements (transpose, permute, reshape), matmul, and the two sources
// (input, full). Layout kernels are exact: they only copy float32 values.
import { registerKernel } from './registry.mjs';
import { stridesOf } from '../../shapes.mjs';
import { DTYPE_NAMES } from '../../dtypes.mjs';

// Input values are written into the node's buffer by the program (data, feed or carry), in
// the buffer of its dtype: no kernel work, so every dtype.
registerKernel('input', () => {}, { dtypes: DTYPE_NAMES });

registerKernel('full', (out, ins, node) => {
  out.fill(node.attrs.value);
});

registerKernel('reshape', (out, [a]) => {
  out.set(a);
}, { dtypes: ['float32', 'int32'] });

registerKernel('transpose', (out, [a], node, [shape]) => {
  const rows = shape[shape.length - 2];
  const cols = shape[shape.length - 1];
  const size = rows * cols;
  for (let base = 0; base < a.length; base += size) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) out[base + c * rows + r] = a[base + r * cols + c];
    }
  }
});

registerKernel('permute', (out, [a], node, [shape]) => {
  const { dims } = node.attrs;
  const outShape = node.shape;
  const rank = outShape.length;
  const inStrides = stridesOf(shape);
  // Walking the output in order, axis d of the output steps the input by inStrides[dims[d]].
  const step = Int32Array.from(dims, (d) => inStrides[d]);
  const idx = new Int32Array(rank);
  let src = 0;
  for (let i = 0; i < out.length; i++) {
    out[i] = a[src];
    for (let d = rank - 1; d >= 0; d--) {
      idx[d]++;
      src += step[d];
      if (idx[d] < outShape[d]) break;
      src -= step[d] * outShape[d];
      idx[d] = 0;
    }
  }
});

/**
 * For each matrix of the output's batch, the index of the operand's matrix (batch broadcast).
 * @param {number[]} outBatch @param {number[]} batch
 */
export function batchIndex(outBatch, batch) {
  const count = outBatch.reduce((p, d) => p * d, 1);
  const rank = outBatch.length;
  const own = stridesOf(batch);
  const index = new Int32Array(count);
  for (let m = 0; m < count; m++) {
    let rest = m;
    let at = 0;
    for (let d = rank - 1; d >= 0; d--) {
      const i = rest % outBatch[d];
      rest = (rest - i) / outBatch[d];
      const k = d - (rank - batch.length);
      if (k >= 0 && batch[k] !== 1) at += i * own[k];
    }
    index[m] = at;
  }
  return index;
}

// Each dot product accumulates in ascending k from 0.0, with the product and the sum each
// rounded to float32 (no fused multiply-add): the protocol's matmul order. Each b matrix is
// first copied transposed, so the k loop reads both operands contiguously.
registerKernel('matmul', (out, [a, b], node, [sa, sb]) => {
  const rows = sa[sa.length - 2];
  const inner = sa[sa.length - 1];
  const cols = sb[sb.length - 1];
  const outBatch = node.shape.slice(0, -2);
  const ia = batchIndex(outBatch, sa.slice(0, -2));
  const ib = batchIndex(outBatch, sb.slice(0, -2));
  const bt = new Float32Array(inner * cols);
  const f = Math.fround;
  let btOf = -1;
  for (let m = 0; m < ia.length; m++) {
    const aBase = ia[m] * rows * inner;
    if (ib[m] !== btOf) {
      btOf = ib[m];
      const bBase = btOf * inner * cols;
      for (let k = 0; k < inner; k++) {
        for (let c = 0; c < cols; c++) bt[c * inner + k] = b[bBase + k * cols + c];
      }
    }
    const oBase = m * rows * cols;
    for (let r = 0; r < rows; r++) {
      const aRow = aBase + r * inner;
      const o = oBase + r * cols;
      let c = 0;
      // Four independent dot products at once: each is still its own ascending-k chain,
      // interleaving them only hides the latency of the rounding chain.
      for (; c + 4 <= cols; c += 4) {
        const b0 = c * inner;
        const b1 = b0 + inner;
        const b2 = b1 + inner;
        const b3 = b2 + inner;
        let acc0 = 0;
        let acc1 = 0;
        let acc2 = 0;
        let acc3 = 0;
        for (let k = 0; k < inner; k++) {
          const x = a[aRow + k];
          acc0 = f(acc0 + f(x * bt[b0 + k]));
          acc1 = f(acc1 + f(x * bt[b1 + k]));
          acc2 = f(acc2 + f(x * bt[b2 + k]));
          acc3 = f(acc3 + f(x * bt[b3 + k]));
        }
        out[o + c] = acc0;
        out[o + c + 1] = acc1;
        out[o + c + 2] = acc2;
        out[o + c + 3] = acc3;
      }
      for (; c < cols; c++) {
        const bCol = c * inner;
        let acc = 0;
        for (let k = 0; k < inner; k++) acc = f(acc + f(a[aRow + k] * bt[bCol + k]));
        out[o + c] = acc;
      }
    }
  }
});

// One Game of Life step on a toroidal grid: a cell is alive when its value is > 0.5.
registerKernel('life', (out, [a], node, [[rows, cols]]) => {
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      let alive = 0;
      for (let dr = -1; dr <= 1; dr++) {
        const rr = (r + dr + rows) % rows;
        for (let dc = -1; dc <= 1; dc++) {
          if (dr === 0 && dc === 0) continue;
          if (a[rr * cols + ((c + dc + cols) % cols)] > 0.5) alive++;
        }
      }
      const self = a[r * cols + c] > 0.5;
      out[r * cols + c] = alive === 3 || (self && alive === 2) ? 1 : 0;
    }
  }
});
