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

/** An output of an imported notebook as a log entry (text, or a PNG picture). */
function entryOf(output) {
  if (output.output_type === 'stream') {
    return { kind: 'stream', payload: { segments: [{ stream: output.name === 'stderr' ? 'stderr' : 'stdout', text: text(output.text) }] } };
  }
  if (output.output_type === 'error') {
    return { kind: 'error', payload: { type: output.ename, message: output.evalue,
      traceback: (output.traceback ?? []).join('\n'), line: null } };
  }
  const plain = output.data?.['text/plain'];
  const png = output.data?.['image/png'];
  if (png !== undefined) {
    const data = text(png).replace(/\s+/g, '');
    // only base64 text becomes a picture (shown as an <img> of a data: URL, never markup)
    if (/^[A-Za-z0-9+/]+={0,2}$/.test(data)) return { kind: 'image', payload: { png: data, alt: text(plain ?? 'image') } };
  }
  return plain === undefined ? null : { kind: 'text', payload: { text: text(plain) } };
}

/** Parse an .ipynb: {name, cells: [{source, log}]}; throws with a clear message if it is not one. */
export function fromIpynb(json, fallbackName) {
  const nb = typeof json === 'string' ? JSON.parse(json) : json;
  if (!nb || nb.nbformat !== 4 || !Array.isArray(nb.cells)) {
    throw new Error('not a Jupyter notebook of format 4 (nbformat: 4 with a list of cells)');
  }
  const cells = nb.cells.map((cell) => {
    const source = text(cell.source);
    if (cell.cell_type === 'markdown') return { source, kind: 'markdown' };
    if (cell.cell_type !== 'code') return { source: source.split('\n').map((l) => `# ${l}`.trimEnd()).join('\n') };
    return { source, log: (cell.outputs ?? []).map(entryOf).filter(Boolean) };
  });
  return { name: nb.metadata?.gpulab?.name ?? fallbackName, cells };
}
