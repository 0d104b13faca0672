// Opening the WebGL2 context: an OffscreenCanvas (so the same code runs in a Web Worker and on
// the main thread), float render targets required, software renderers refused unless allowed,
// and context loss turned into BACKEND errors instead of silent no-op GL calls.
import { GpuLabError } from '../../errors.mjs';
import { softwareHint } from '../software-hint.mjs';

/** Renderer names of software rasterizers (matched case-insensitively). */
const SOFTWARE_RENDERERS = ['swiftshader', 'llvmpipe', 'softpipe', 'microsoft basic render'];

/** @param {string} renderer */
export function isSoftwareRenderer(renderer) {
  const r = renderer.toLowerCase();
  return SOFTWARE_RENDERERS.some((s) => r.includes(s));
}

/** A 1x1 canvas: every kernel renders into its own framebuffer, never to the canvas. */
function makeCanvas() {
  if (typeof OffscreenCanvas === 'function') return new OffscreenCanvas(1, 1);
  if (typeof document !== 'undefined') return document.createElement('canvas');
  throw new GpuLabError('UNAVAILABLE', 'no OffscreenCanvas or document here: WebGL2 needs a browser');
}

const CONTEXT_ATTRIBUTES = {
  alpha: false, depth: false, stencil: false, antialias: false,
  premultipliedAlpha: false, preserveDrawingBuffer: false, powerPreference: 'high-performance',
};

/** Vendor and renderer, unmasked where the browser allows it. */
function rendererFacts(gl) {
  const dbg = gl.getExtension('WEBGL_debug_renderer_info');
  const vendor = dbg ? gl.getParameter(dbg.UNMASKED_VENDOR_WEBGL) : gl.getParameter(gl.VENDOR);
  const renderer = dbg ? gl.getParameter(dbg.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);
  return { vendor: String(vendor ?? ''), renderer: String(renderer ?? '') };
}

/**
 * @typedef {object} GlContext
 * @property {WebGL2RenderingContext} gl
 * @property {{vendor: string, architecture: string, description: string, software: boolean}} info
 * @property {number} maxTextureSize
 * @property {() => void} check throws BACKEND once the context is lost
 * @property {() => void} lose  loses the context on purpose (tests; dispose)
 */

/**
 * Open a WebGL2 context or throw UNAVAILABLE with the reason.
 * @param {{allowSoftware: boolean, softwareHint?: string}} opts
 * @returns {GlContext}
 */
export function openContext({ allowSoftware, softwareHint: hint }) {
  const canvas = makeCanvas();
  /** @type {WebGL2RenderingContext|null} */
  const gl = /** @type {any} */ (canvas.getContext('webgl2', CONTEXT_ATTRIBUTES));
  if (!gl) throw new GpuLabError('UNAVAILABLE', 'WebGL2 is not available (getContext returned null)');
  const { vendor, renderer } = rendererFacts(gl);
  const software = isSoftwareRenderer(renderer);
  const fail = (/** @type {string} */ why) => {
    gl.getExtension('WEBGL_lose_context')?.loseContext();  // give the context back now
    throw new GpuLabError('UNAVAILABLE', why);
  };
  if (software && !allowSoftware) {
    fail(`software renderer refused: "${renderer}" (${softwareHint({ softwareHint: hint })})`);
  }
  if (!gl.getExtension('EXT_color_buffer_float')) {
    fail(`EXT_color_buffer_float missing on "${renderer}": float32 render targets are required`);
  }
  const lost = { value: false, reason: '' };
  canvas.addEventListener('webglcontextlost', (ev) => {
    ev.preventDefault?.();
    lost.value = true;
    lost.reason ||= 'webglcontextlost event';
  });
  const loseExt = gl.getExtension('WEBGL_lose_context');
  return {
    gl,
    info: { vendor, architecture: 'webgl2', description: renderer, software },
    maxTextureSize: gl.getParameter(gl.MAX_TEXTURE_SIZE),
    check() {
      if (!lost.value && gl.isContextLost()) {
        lost.value = true;
        lost.reason = 'gl.isContextLost()';
      }
      if (lost.value) throw new GpuLabError('BACKEND', `WebGL2 context lost (${lost.reason})`);
    },
    lose() {
      if (!lost.value) lost.reason = 'WEBGL_lose_context.loseContext()';
      loseExt?.loseContext();
      lost.value = true;
    },
  };
}
