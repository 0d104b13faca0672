// Notebooks as Jupyter files: export to nbformat 4.5 (.ipynb, outputs included: streams, text,
// tables as text/plain, canvases and plots as image/png, errors) and to a .py script in the
// "percent" format (`# %%` between cells); import of an .ipynb (code cells with their text and
// image/png outputs; markdown cells stay markdown, raw cells become commented code cells).
import { plotPng } from './plot.mjs';
import { formatFloat32 } from './render.mjs';

const KERNEL = { name: 'python3', display_name: 'Python 3 (Pyodide, GPU Lab)', language: 'python' };

/** nbformat keeps sources as a list of lines, each with its newline but the last. */
function lines(text) {
  const parts = text.split('\n');
  return parts.map((line, i) => (i < parts.length - 1 ? `${line}\n` : line)).filter((l) => l !== '');
}

function tableText({ title, backend, outputs }) {
  const head = `${title ? `${title} — ` : ''}ran on ${backend ?? '?'}`;
  const body = outputs.map((o) => `${o.name} — shape [${o.shape.join(', ')}] ${o.dtype}\n` +
    `[${Array.from(o.data, formatFloat32).join(', ')}]`);
  return [head, ...body].join('\n');
}

/** The PNG of a drawn canvas or plot, from the cell's rendered output. */
function pngOf(cell, kind, name) {
  const figure = [...cell.output.querySelectorAll('figure.drawing')].find((f) => f.dataset.key === `${kind}:${name}`);
  if (figure && kind === 'plot') return plotPng(figure); // title, chart and legend (plot.mjs)
  const url = figure?.querySelector('canvas')?.toDataURL('image/png') ?? '';
  return url.replace(/^data:image\/png;base64,/, '');
}

/** One cell's log (cell-output.mjs) as nbformat outputs. */
function outputsOf(cell, count) {
  const outputs = [];
  const stream = (name, text) => {
    const last = outputs[outputs.length - 1];
    if (last?.output_type === 'stream' && last.name === name) last.text += text;
    else outputs.push({ output_type: 'stream', name, text });
  };
  for (const { kind, payload } of cell.log) {
    if (kind === 'stream') {
      for (const s of payload.segments) stream(s.stream, s.text);
      if (payload.final && payload.dropped) stream('stdout', `… ${payload.dropped.lines} lines dropped …\n`);
      for (const s of payload.tail ?? []) stream(s.stream, s.text);
    } else if (kind === 'text') {
      outputs.push({ output_type: 'execute_result', execution_count: count, data: { 'text/plain': payload.text }, metadata: {} });
    } else if (kind === 'table') {
      outputs.push({ output_type: 'display_data', data: { 'text/plain': tableText(payload) }, metadata: {} });
    } else if (kind === 'canvas' || kind === 'plot') {
      const png = pngOf(cell, kind, payload.name);
      const data = { 'text/plain': `${kind} ${payload.name}${payload.title ? `: ${payload.title}` : ''}` };
      if (png) data['image/png'] = png;
      outputs.push({ output_type: 'display_data', data, metadata: {} });
    } else if (kind === 'image') { // a picture an imported notebook brought: exported as it came
      outputs.push({ output_type: 'display_data', data: { 'text/plain': payload.alt, 'image/png': payload.png }, metadata: {} });
    } else if (kind === 'error') {
      outputs.push({ output_type: 'error', ename: payload.type, evalue: payload.message,
        traceback: String(payload.traceback ?? '').split('\n').filter(Boolean) });
    }
  }
  for (const o of outputs) if (o.output_type === 'stream') o.text = lines(o.text);
  return outputs;
}

/** nbformat 4.5 JSON of the notebook's cells. */
export function toIpynb(name, cells) {
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: { kernelspec: KERNEL, language_info: { name: 'python' }, gpulab: { name } },
    cells: cells.map((cell, i) => {
      if (cell.kind === 'markdown') {
        return { cell_type: 'markdown', id: `cell-${i + 1}`, metadata: {}, source: lines(cell.source()) };
      }
      const count = cell.runs > 0 ? cell.runs : null;
      return { cell_type: 'code', id: `cell-${i + 1}`, metadata: {}, execution_count: count,
        source: lines(cell.source()), outputs: outputsOf(cell, count) };
    }),
  };
}

/** A .py script: the cells in order, `# %%` before each (Jupytext's / VS Code's percent format). */
export function toPy(name, cells) {
  const body = cells.map((cell) => (cell.kind === 'markdown'
    ? `# %% [markdown]\n${cell.source().replace(/\s+$/, '').split('\n').map((l) => `# ${l}`.trimEnd()).join('\n')}\n`
    : `# %%\n${cell.source().replace(/\s+$/, '')}\n`)).join('\n');
  return `# ${name} — exported from the GPU Lab playground\n\n${body}`;
}

const text = (value) => (Array.isArray(value) ? value.join('') : String(value ?? ''));

/** nbformat's multiline string: a string, or a list of strings. */
const isMultiline = (value) => typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string'));
const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Why an output does not follow nbformat 4 in what the import reads, or '' if it does. */
function outputProblem(output) {
  if (!isObject(output)) return 'not an object';
  if (output.output_type === 'stream') {
    return typeof output.name === 'string' && isMultiline(output.text) ? '' : 'a stream without name and text';
  }
  if (output.output_type === 'error') {
    if (typeof output.ename !== 'string' || typeof output.evalue !== 'string') return 'an error without ename and evalue';
    return Array.isArray(output.traceback) && output.traceback.every((l) => typeof l === 'string')
      ? '' : 'an error whose traceback is not a list of lines';
  }
  if (output.output_type === 'execute_result' || output.output_type === 'display_data') {
    return isObject(output.data) && Object.values(output.data).every(isMultiline) ? '' : 'a result whose data is not text';
  }
  return `an unknown output_type ${JSON.stringify(output.output_type)?.slice(0, 40)}`;
}

/** An output of an imported notebook (checked by outputProblem) as a log entry (text, or a PNG picture). */
function entryOf(output) {
  if (output.output_type === 'stream') {
    return { kind: 'stream', payload: { segments: [{ stream: output.name === 'stderr' ? 'stderr' : 'stdout', text: text(output.text) }] } };
  }
  if (output.output_type === 'error') {
    return { kind: 'error', payload: { type: output.ename, message: output.evalue,
      traceback: output.traceback.join('\n'), line: null } };
  }
  const plain = output.data['text/plain'];
  const png = output.data['image/png'];
  if (png !== undefined) {
    const data = text(png).replace(/\s+/g, '');
    // only base64 text becomes a picture (shown as an <img> of a data: URL, never markup)
    if (/^[A-Za-z0-9+/]+={0,2}$/.test(data)) return { kind: 'image', payload: { png: data, alt: text(plain ?? 'image') } };
  }
  return plain === undefined ? null : { kind: 'text', payload: { text: text(plain) } };
}

/** A code cell's outputs as log entries; what cannot be read is skipped and described. */
function logOf(cell, where, skipped) {
  if (cell.outputs == null) return []; // absent (nbformat requires the list; a missing one holds nothing)
  if (!Array.isArray(cell.outputs)) {
    skipped.push(`${where}: its outputs are not a list`);
    return [];
  }
  const log = [];
  cell.outputs.forEach((output, i) => {
    const problem = outputProblem(output);
    if (problem) skipped.push(`${where}, output ${i + 1}: ${problem}`);
    else log.push(entryOf(output));
  });
  return log.filter(Boolean);
}

/**
 * Parse an .ipynb: {name, cells: [{source, log}], skipped}; throws with a clear message if it is
 * not a notebook at all. A cell or an output that does not follow nbformat is left out and
 * described in `skipped` (one bad output does not refuse the notebook).
 */
export function fromIpynb(json, fallbackName) {
  const nb = typeof json === 'string' ? JSON.parse(json) : json;
  if (!nb || nb.nbformat !== 4 || !Array.isArray(nb.cells)) {
    throw new Error('not a Jupyter notebook of format 4 (nbformat: 4 with a list of cells)');
  }
  const skipped = [];
  const cells = [];
  nb.cells.forEach((cell, i) => {
    const where = `cell ${i + 1}`;
    if (!isObject(cell) || !(cell.source === undefined || isMultiline(cell.source))) {
      skipped.push(`${where}: not a cell with a source`);
      return;
    }
    const source = text(cell.source);
    if (cell.cell_type === 'markdown') cells.push({ source, kind: 'markdown' });
    else if (cell.cell_type !== 'code') cells.push({ source: source.split('\n').map((l) => `# ${l}`.trimEnd()).join('\n') });
    else cells.push({ source, log: logOf(cell, where, skipped) });
  });
  const name = typeof nb.metadata?.gpulab?.name === 'string' ? nb.metadata.gpulab.name : fallbackName;
  return { name, cells, skipped };
}
