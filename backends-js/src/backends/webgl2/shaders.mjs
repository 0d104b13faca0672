// GLSL sources and compiled programs. Every shader is one file in kernels/glsl/, fetched at
// run time next to this module (so the browser reads the same bytes that are reviewed); a
// program is "#version 300 es" + the pass's #defines + common.glsl + included files + the kernel
// file. Programs are compiled once per (file, defines) and cached for the context's life.
import { GpuLabError } from '../../errors.mjs';
import { kernelFile } from '../../kernel-files.mjs';

/** @param {string} file */
const sourceUrl = (file) => kernelFile(`glsl/${file}`);

/** file name -> Promise<text>, shared by every context of this page or worker. */
const sourceCache = new Map();

/** @param {string} file */
function fetchSource(file) {
  if (!sourceCache.has(file)) {
    const p = fetch(sourceUrl(file)).then(async (res) => {
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return res.text();
    }).catch((err) => {
      sourceCache.delete(file);
      throw new GpuLabError('BACKEND', `cannot load shader kernels/glsl/${file}: ${err.message}`);
    });
    sourceCache.set(file, p);
  }
  return sourceCache.get(file);
}

const INCLUDE = /^\/\/! include (\S+)$/gm;

/** A kernel file with its `//! include x.glsl` lines replaced by x's text (once each). */
async function expandedSource(file) {
  const text = await fetchSource(file);
  const parts = [];
  for (const m of text.matchAll(INCLUDE)) parts.push(await expandedSource(m[1]));
  return parts.join('\n') + '\n' + text.replace(INCLUDE, '');
}

const VERTEX_SOURCE = `#version 300 es
// One triangle that covers the viewport; no vertex buffers.
void main() {
  vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}`;

/**
 * @typedef {object} GlProgram
 * @property {WebGLProgram} handle
 * @property {Map<string, WebGLUniformLocation|null>} locations
 * @property {string} key
 * @property {any} [lastCommand] the program's draw command that set its uniforms last
 *   (program.mjs draw: a command drawing it again with nothing in between sets none)
 */

export class ShaderCache {
  /**
   * @param {WebGL2RenderingContext} gl
   * @param {(file: string, source: string) => string} [transform] test hook: edits a program's
   *   fragment source before compiling (to inject a GLSL error)
   */
  constructor(gl, transform = (file, source) => source) {
    this.gl = gl;
    this.transform = transform;
    /** @type {Map<string, Promise<GlProgram>>} */
    this.programs = new Map();
    /** @type {Set<WebGLProgram>} linked programs, deleted on dispose */
    this.handles = new Set();
    /** @type {Map<string, Promise<string>>} */
    this.fragmentSources = new Map();
    this.vertex = null;
    // Where the browser offers it, the driver compiles in the background and we poll.
    this.parallel = gl.getExtension('KHR_parallel_shader_compile');
  }

  /** Program key of a shader file and its defines. */
  static key(file, defines) {
    return `${file}|${Object.entries(defines).map(([k, v]) => `${k}=${v}`).join(',')}`;
  }

  /** Fetch (once) what a set of passes needs; compile later with get(). */
  async load(passes) {
    await Promise.all([...new Set(passes.map((p) => p.shader))].map(async (file) => {
      if (!this.fragmentSources.has(file)) {
        this.fragmentSources.set(file, Promise.all([fetchSource('common.glsl'), expandedSource(file)])
          .then(([common, body]) => `${common}\n${body}`));
      }
      await this.fragmentSources.get(file);
    }));
  }

  /**
   * The linked program for a shader file and defines (load() must have fetched the file).
   * Callers that ask for several programs at once (Promise.all) get every compile and link
   * issued before the first status query, so the driver can overlap them.
   * @param {string} file
   * @param {Record<string, string|number>} defines
   * @returns {Promise<GlProgram>}
   */
  get(file, defines) {
    const key = ShaderCache.key(file, defines);
    if (!this.programs.has(key)) {
      const built = this.build(file, defines, key);
      this.programs.set(key, built);
      built.catch(() => this.programs.delete(key));  // a failed build may be retried
    }
    return this.programs.get(key);
  }

  /** @param {string} file @param {Record<string, string|number>} defines @param {string} key */
  async build(file, defines, key) {
    const body = await this.fragmentSources.get(file);
    const head = Object.entries(defines).map(([k, v]) => `#define ${k} ${v}`).join('\n');
    const gl = this.gl;
    this.vertex ??= this.compileVertex();
    const fs = gl.createShader(gl.FRAGMENT_SHADER);
    gl.shaderSource(fs, this.transform(file, `#version 300 es\n${head}\n${body}`));
    gl.compileShader(fs);
    const handle = gl.createProgram();
    gl.attachShader(handle, this.vertex);
    gl.attachShader(handle, fs);
    gl.linkProgram(handle);
    await this.linked(handle);
    try {
      this.check(handle, fs, key);
    } finally {
      gl.deleteShader(fs);  // flagged: freed with the program
    }
    this.handles.add(handle);
    return { handle, key, locations: new Map() };
  }

  /** Resolves once a program's link has finished (at once without KHR_parallel_shader_compile). */
  async linked(handle) {
    const gl = this.gl;
    if (!this.parallel) return;
    // A lost context reports completion, so this cannot wait forever on a dead context.
    while (!gl.isContextLost() &&
      !gl.getProgramParameter(handle, this.parallel.COMPLETION_STATUS_KHR)) {
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }

  /** Throw BACKEND with the driver's log if a program did not compile or link. */
  check(handle, fs, key) {
    const gl = this.gl;
    if (gl.getProgramParameter(handle, gl.LINK_STATUS) || gl.isContextLost()) return;
    const compiled = gl.getShaderParameter(fs, gl.COMPILE_STATUS);
    const log = compiled ? gl.getProgramInfoLog(handle) : gl.getShaderInfoLog(fs);
    gl.deleteProgram(handle);
    throw new GpuLabError('BACKEND', `GLSL ${compiled ? 'link' : 'compile'} error in ${key}: ${log}`);
  }

  compileVertex() {
    const gl = this.gl;
    const vs = gl.createShader(gl.VERTEX_SHADER);
    gl.shaderSource(vs, VERTEX_SOURCE);
    gl.compileShader(vs);
    if (!gl.getShaderParameter(vs, gl.COMPILE_STATUS) && !gl.isContextLost()) {
      throw new GpuLabError('BACKEND', `GLSL compile error in the vertex shader: ${gl.getShaderInfoLog(vs)}`);
    }
    return vs;
  }

  /** @param {GlProgram} prog @param {string} name */
  location(prog, name) {
    if (!prog.locations.has(name)) prog.locations.set(name, this.gl.getUniformLocation(prog.handle, name));
    return prog.locations.get(name);
  }

  dispose() {
    for (const h of this.handles) this.gl.deleteProgram(h);
    if (this.vertex) this.gl.deleteShader(this.vertex);
    this.handles.clear();
    this.programs.clear();
    this.vertex = null;
  }
}
