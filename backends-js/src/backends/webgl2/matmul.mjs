// Batched matmul with broadcast batch axes (rank <= 4, so at most two batch axes), in three
// kinds of passes: a packed along K and b packed along N into RGBA32F scratch textures
// (pack.glsl), the product, and the result unpacked into the output tensor (unpack.glsl).
// Texel fetches are what a matmul costs here (docs/webgl2.md, "Speed"), so the product reads
// 4 values per fetch and computes several outputs per fragment:
//   blocks (matmul_blocks.glsl): an 8x4 (or 4x4) output block per fragment, written to 8 (4)
//     layers at once; needs one matrix row per texture row (rows and texels per row within the
//     texture limit), and 8 draw buffers for 8 rows (WebGL2 promises 4).
//   flat (matmul.glsl): 4 outputs per fragment over flat packed textures; any size.
import { registerKernel, broadcastStrides, sizeOf } from './registry.mjs';

/** Texels per packed row of `cols` values. @param {number} cols */
const texelsPerRow = (cols) => Math.ceil(cols / 4);

/**
 * Strides, in units of one matrix, of an operand's batch axes along the output's two (padded)
 * batch axes (0 where the operand broadcasts).
 * @param {number[]} shape operand shape [..., R, C] @param {number[]} outBatch
 */
function batchStrides(shape, outBatch) {
  const batch = shape.slice(0, -2);
  const s = broadcastStrides(batch.length ? batch : [1], outBatch.length ? outBatch : [1]);
  return [s[2], s[3]];
}

/** [rows, cols] of an operand seen as a stack of rows. @param {number[]} shape */
function rowsOf(shape) {
  const cols = shape[shape.length - 1];
  return [sizeOf(shape) / cols, cols];
}

/**
 * The pass packing operand `id` along its rows into a new scratch texture; with `rowPerLine`
 * the texture is exactly one packed row wide, so texel (q, r) is row r's q-th texel. A
 * transpose the program does not compute is packed from its source, read transposed.
 * @param {import('./registry.mjs').KernelContext} k @param {number} id @param {boolean} rowPerLine
 */
function packPass(k, id, rowPerLine) {
  const shape = k.shape(id);
  // a tensor the program keeps packed (packing.mjs) is already this texture: no pass
  if (rowPerLine && k.packed?.(id)) return { target: k.slot(id) };
  const [rows, cols] = rowsOf(shape);
  const tpr = texelsPerRow(cols);
  const source = k.transposeSource(id);
  const from = k.packed?.(source ?? id) ? { A_PACKED: 1 } : {};
  return {
    shader: 'pack.glsl',
    defines: source === undefined ? { PACKED_OUT: 1, ...from } : { PACKED_OUT: 1, TRANSPOSED: 1, ...from },
    inputs: { u_a: k.slot(source ?? id) },
    uniforms: { u_cols: ['i', cols], u_tpr: ['i', tpr], u_rows: ['i', shape[shape.length - 2]] },
    target: k.temp4(rows * tpr, { width: rowPerLine ? tpr : 0 }),
  };
}

/** @param {{node: any, k: import('./registry.mjs').KernelContext, M: number, N: number, K: number, batch: number[]}} m */
function blocksFit({ node, k, M, N, K, batch }) {
  const max = k.maxTextureSize;
  const [a, b] = node.operands.map((id) => rowsOf(k.shape(id)));
  const within = (rows, cols) => rows <= max && texelsPerRow(cols) <= max;
  const groups = Math.ceil(M / k.options.blockRows);
  return within(...a) && within(...b) && within(sizeOf(batch) * groups, N) && K > 0;
}

/**
 * The passes computing a matmul node's product into packed scratch, without unpacking it, and
 * how to read it (packed_result.glsl's defines, sampler and uniforms). Used by the matmul
 * kernel (which unpacks into its output) and by kernels that absorb a matmul.
 * @param {any} node @param {import('./registry.mjs').KernelContext} k
 * @returns {{passes: import('./registry.mjs').Pass[], read: {defines: Record<string, number>,
 *   inputs: Record<string, number>, uniforms: Record<string, [string, any]>}}}
 */
export function matmulProduct(node, k) {
  const [a, b] = node.operands;
  const sa = k.shape(a);
  const sb = k.shape(b);
  const out = node.shape;
  const [M, N] = out.slice(-2);
  const K = sa[sa.length - 1];
  const outBatch = out.slice(0, -2);
  const batch = [...Array(2 - outBatch.length).fill(1), ...outBatch];
  const tk = texelsPerRow(K);
  const tn = texelsPerRow(N);
  const stridesA = batchStrides(sa, outBatch);
  const stridesB = batchStrides(sb, outBatch);
  if (!k.options?.flatMatmul && blocksFit({ node, k, M, N, K, batch })) {
    const packA = packPass(k, a, true);
    const packB = packPass(k, b, true);
    const rows = k.options.blockRows;
    const groups = Math.ceil(M / rows);
    const product = k.temp4(sizeOf(batch) * groups * tn, { layers: rows, width: tn });
    return {
      passes: [...[packA, packB].filter((p) => p.shader), {
        shader: 'matmul_blocks.glsl', defines: { BLOCK_ROWS: rows },
        inputs: { u_a: packA.target, u_b: packB.target }, target: product,
        uniforms: { u_shape: ['i4', [...batch, groups, tn]], u_m: ['i', M], u_k: ['i', K],
          u_sa: ['i2', stridesA], u_sb: ['i2', stridesB] },
      }],
      read: { defines: { RESULT_LAYERS: 1 }, inputs: { u_rq: product },
        uniforms: { u_rcols: ['i', N], u_rm: ['i', M], u_rrows: ['i', rows] } },
    };
  }
  const packA = packPass(k, a, false);
  const packB = packPass(k, b, false);
  const product = k.temp4(sizeOf(batch) * M * tn);
  return {
    passes: [packA, packB, {
      shader: 'matmul.glsl', defines: { PACKED_OUT: 1 },
      inputs: { u_a: packA.target, u_b: packB.target }, target: product,
      uniforms: {
        u_shape: ['i4', [...batch, M, tn]],
        u_k: ['i', K],
        u_sa: ['i2', stridesA.map((s) => s * M * tk)],
        u_sb: ['i2', stridesB.map((s) => s * K * tn)],
      },
    }],
    read: { defines: { RESULT_FLAT: 1 }, inputs: { u_rp: product },
      uniforms: { u_rcols: ['i', N], u_rtpr: ['i', tn] } },
  };
}

registerKernel('matmul', (node, k) => {
  const { passes, read } = matmulProduct(node, k);
  return [...passes, { shader: 'unpack.glsl', ...read, target: k.out }];
}, { readsTransposed: true, packs: {
  // a packed operand is its own block-path packing (one matrix row per texture row); the
  // other packings read it packed (pack.glsl A_PACKED)
  reads: () => true,
  writes: () => null,
} });
