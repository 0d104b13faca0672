// The WebGL2 backend: every op of the op table as a GLSL ES 3.00 fragment shader
// (kernels/glsl/) over R32F textures, one fragment per output element. See docs/webgl2.md for
// the texture layout and the numerics.
//
// Policy: needs WebGL2 on an OffscreenCanvas (workers and main thread) with
// EXT_color_buffer_float; software renderers (SwiftShader, llvmpipe, softpipe, Microsoft Basic
// Render) are refused with UNAVAILABLE naming the renderer unless allowSoftware. After
// validation every failure is BACKEND; a lost context fails the run in flight and every later
// call with BACKEND (never a hang).
//
// Test hooks: the backend reads, from the `hooks` object given to createBackend/createRuntime,
//   hooks.webgl2MaxTextureSize  a smaller texture width/height limit, so small tensors wrap
//                               across texture rows the way large ones do (layout tests)
//   hooks.webgl2PoolBytes       the byte budget of free pooled textures (default 256 MiB)
//   hooks.webgl2TransformSource(file, source)  edits a fragment shader before it is compiled
//                               (inject a GLSL error)
//   hooks.webgl2FlatMatmul      true: every matmul takes the general path (flat packed
//                               textures, 4 outputs per fragment), as when the blocks'
//                               textures would pass the texture limit
//   hooks.webgl2BlockRows       4: matmul blocks of 4 rows, as on a context with fewer than 8
//                               draw buffers (default: 8 where there are 8)
//   hooks.webgl2NoEpilogue      true: add / sub / mul never take a matmul operand into their pass
//   hooks.webgl2NoShortRows     true: rows of <= 64 elements reduce by the general loop (reduce.glsl)
//   hooks.webgl2NoPacking       true: no tensor is stored packed (packing.mjs), every one R32F
//   hooks.webgl2Profile         an array: run() then syncs after every draw and pushes
//                               {key, n, ms} per pass (per-kernel timing; slows runs down)
// and fills in
//   hooks.loseContext()   loses the context through WEBGL_lose_context
//   hooks.webgl2Stats()   {liveTextures, liveFramebuffers, free, freeBytes, created, reused,
//                          programs, livePrograms}
import { GpuLabError } from '../errors.mjs';
import { openContext } from './webgl2/context.mjs';
import { ShaderCache } from './webgl2/shaders.mjs';
import { TexturePool } from './webgl2/textures.mjs';
import { WebGL2Program } from './webgl2/program.mjs';
import { BACKEND } from './webgl2/registry.mjs';
import { supportsGraph } from '../kernels.mjs';
import './webgl2/elementwise.mjs';
import './webgl2/layout.mjs';
import './webgl2/matmul.mjs';
import './webgl2/extremes.mjs';
import './webgl2/reductions.mjs';
import './webgl2/select.mjs';
import './webgl2/index.mjs';
import './webgl2/window.mjs';
import './webgl2/quant.mjs';

export const name = 'webgl2';

/**
 * Which nodes of a checked graph this backend has no kernel for (answered from the shared
 * registry, before any device work).
 * @param {any} checked @param {{without?: Iterable<string>}} [options]
 */
export function supports(checked, options) {
  return supportsGraph(BACKEND, checked, options);
}

/**
 * @param {{allowSoftware?: boolean, softwareHint?: string, hooks?: Record<string, any>}} [opts]
 */
export async function createBackend({ allowSoftware = false, softwareHint, hooks = {} } = {}) {
  const ctx = openContext({ allowSoftware, softwareHint });
  const gl = ctx.gl;
  const maxTextureSize = Math.min(ctx.maxTextureSize, hooks?.webgl2MaxTextureSize ?? Infinity);
  const pool = new TexturePool(gl, maxTextureSize, hooks?.webgl2PoolBytes);
  const shaders = new ShaderCache(gl, hooks?.webgl2TransformSource);
  const vao = gl.createVertexArray();  // no attributes: the vertex shader uses gl_VertexID
  gl.bindVertexArray(vao);
  gl.disable(gl.DITHER);  // on by default in GL; must never touch a stored value
  /** @type {Set<WebGL2Program>} */
  const programs = new Set();
  // 8 rows per matmul block need 8 color attachments drawn at once (WebGL2 promises 4).
  const drawBuffers = Math.min(gl.getParameter(gl.MAX_DRAW_BUFFERS),
    gl.getParameter(gl.MAX_COLOR_ATTACHMENTS));
  const blockRows = drawBuffers >= 8 && hooks?.webgl2BlockRows !== 4 ? 8 : 4;
  const env = { gl, ctx, pool, shaders, profile: hooks?.webgl2Profile,
    kernelOptions: { flatMatmul: Boolean(hooks?.webgl2FlatMatmul), blockRows,
      packing: !hooks?.webgl2NoPacking, shortRows: !hooks?.webgl2NoShortRows,
      epilogue: !hooks?.webgl2NoEpilogue } };
  let disposed = false;

  const stats = () => ({ ...pool.stats(), programs: shaders.handles.size, livePrograms: programs.size });
  if (hooks && typeof hooks === 'object') {
    hooks.loseContext = () => ctx.lose();
    hooks.webgl2Stats = stats;
  }

  return {
    name,
    info: ctx.info,
    limits: { maxTextureSize },
    stats,

    /**
     * Allocate, compile and upload a checked graph.
     * @param {any} checked
     * @param {{feeds?: number[], carry?: Map<number, number>, keep?: number[]}} [session]
     */
    async prepare(checked, session = {}) {
      if (disposed) throw new GpuLabError('DISPOSED', 'the webgl2 backend was disposed');
      ctx.check();
      const program = new WebGL2Program(env, checked, session);
      programs.add(program);
      program.onDispose = () => programs.delete(program);
      try {
        await program.build();
      } catch (err) {
        program.dispose();
        if (err instanceof GpuLabError) throw err;
        throw new GpuLabError('BACKEND', `webgl2 prepare failed: ${err?.message ?? err}`, null,
          { cause: err });
      }
      return program;
    },

    dispose() {
      if (disposed) return;
      disposed = true;
      for (const p of [...programs]) p.dispose();
      pool.dispose();
      shaders.dispose();
      gl.deleteVertexArray(vao);
      ctx.lose();  // hand the context back now: pages may hold only a few at a time
    },
  };
}
