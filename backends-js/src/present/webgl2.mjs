// The WebGL2 presenter: a fragment shader reads the output's texture (texelFetch, one fragment
// per tensor element) into the backend context's own canvas, whose frame is handed to the
// page's canvas as an ImageBitmap (transferToImageBitmap: it stays a GPU image, no readPixels).
import { GpuLabError } from '../errors.mjs';
import { glslColour, modeNumber } from './colors.mjs';
import { registerPresenter } from './registry.mjs';

const VERTEX = `#version 300 es
void main() {
  vec2 xy = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  gl_Position = vec4(xy * 2.0 - 1.0, 0.0, 1.0);
}`;

/** Texture kind -> sampler type and how element i becomes a float. */
const T = 'ivec2(i % u_texw, i / u_texw)';
const SAMPLERS = {
  float: ['sampler2D', `texelFetch(u_tex, ${T}, 0).r`],
  int: ['isampler2D', `float(texelFetch(u_tex, ${T}, 0).r)`],
  uint: ['usampler2D', `float(texelFetch(u_tex, ${T}, 0).r)`],
  // a packed tensor (backends/webgl2/packing.mjs): 4 consecutive elements per RGBA texel
  packed: ['sampler2D', 'texelFetch(u_tex, ivec2((i / 4) % u_texw, (i / 4) / u_texw), 0)[i & 3]'],
};

/** @param {'float'|'int'|'uint'|'packed'} kind */
const fragment = (kind) => `#version 300 es
precision highp float;
precision highp int;
uniform highp ${SAMPLERS[kind][0]} u_tex;
uniform ivec2 u_size;
uniform int u_texw;
uniform uint u_mode;
uniform float u_vmin;
uniform float u_vmax;
out vec4 o_colour;
${glslColour()}
void main() {
  int col = min(int(gl_FragCoord.x), u_size.x - 1);
  int row = u_size.y - 1 - min(int(gl_FragCoord.y), u_size.y - 1);  // GL's origin: bottom left
  int i = row * u_size.x + col;
  o_colour = vec4(colour(${SAMPLERS[kind][1]}, u_mode, u_vmin, u_vmax), 1.0);
}`;

/** @param {WebGL2RenderingContext} gl @param {number} type @param {string} source */
function compile(gl, type, source) {
  const shader = gl.createShader(type);
  gl.shaderSource(shader, source);
  gl.compileShader(shader);
  if (!gl.getShaderParameter(shader, gl.COMPILE_STATUS)) {
    throw new GpuLabError('BACKEND', `webgl2 present shader: ${gl.getShaderInfoLog(shader)}`);
  }
  return shader;
}

/** @param {WebGL2RenderingContext} gl @param {'float'|'int'|'uint'|'packed'} kind */
function link(gl, kind) {
  const prog = gl.createProgram();
  gl.attachShader(prog, compile(gl, gl.VERTEX_SHADER, VERTEX));
  gl.attachShader(prog, compile(gl, gl.FRAGMENT_SHADER, fragment(kind)));
  gl.linkProgram(prog);
  if (!gl.getProgramParameter(prog, gl.LINK_STATUS)) {
    throw new GpuLabError('BACKEND', `webgl2 present program: ${gl.getProgramInfoLog(prog)}`);
  }
  const at = (name) => gl.getUniformLocation(prog, name);
  return { prog, tex: at('u_tex'), size: at('u_size'), texw: at('u_texw'), mode: at('u_mode'),
    vmin: at('u_vmin'), vmax: at('u_vmax') };
}

/** @type {import('./registry.mjs').Presenter} */
const webgl2Presenter = {
  open(program, canvas, view) {
    const gl = program.gl;
    const target = /** @type {ImageBitmapRenderingContext} */ (canvas.getContext('bitmaprenderer'));
    canvas.width = view.width;
    canvas.height = view.height;
    /** @type {Map<string, ReturnType<typeof link>>} */
    const linked = new Map();
    return {
      readsBack: false,
      async draw(prog, id) {
        prog.checkLive();
        const tex = prog.currentTexture(id);
        const kind = tex.channels === 4 ? 'packed' : tex.kind;
        if (!linked.has(kind)) linked.set(kind, link(gl, kind));
        const p = linked.get(kind);
        const own = /** @type {OffscreenCanvas} */ (gl.canvas);
        if (own.width !== view.width) own.width = view.width;
        if (own.height !== view.height) own.height = view.height;
        gl.bindFramebuffer(gl.FRAMEBUFFER, null);
        gl.viewport(0, 0, view.width, view.height);
        gl.useProgram(p.prog);
        gl.activeTexture(gl.TEXTURE0);
        gl.bindTexture(gl.TEXTURE_2D, tex.texture);
        gl.uniform1i(p.tex, 0);
        gl.uniform2i(p.size, view.width, view.height);
        gl.uniform1i(p.texw, tex.w);
        gl.uniform1ui(p.mode, modeNumber(view.colouring));
        gl.uniform1f(p.vmin, view.colouring.vmin);
        gl.uniform1f(p.vmax, view.colouring.vmax);
        gl.drawArrays(gl.TRIANGLES, 0, 3);
        prog.checkGl('present');
        target.transferFromImageBitmap(own.transferToImageBitmap());
      },
      close() {
        for (const p of linked.values()) gl.deleteProgram(p.prog);
        linked.clear();
      },
    };
  },
};

registerPresenter('webgl2', webgl2Presenter);
