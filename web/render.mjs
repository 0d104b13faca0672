// Cell outputs: text streams, result tables, 0/1 grids on a canvas, tracebacks (plots: plot.mjs).
// Everything is built with DOM calls (never innerHTML), so program output cannot inject markup.
import { parseWgslError, renderWgslError } from './wgsl-error.mjs';

const MAX_ROWS = 16;
const MAX_COLS = 12;

/** @param {string} tag @param {Record<string, any>} [props] @param {Array<Node|string>} [children] */
export function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('aria-') || key === 'role' || key.startsWith('data-')) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

/**
 * The shortest decimal that reads back as the same float32 (so 0.1f prints as 0.1, and
 * integers print like Python floats: 60.0).
 * @param {number} x
 */
export function formatFloat32(x) {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (Object.is(x, -0)) return '-0.0';
  let text = String(x);
  for (let p = 1; p <= 9; p += 1) {
    const candidate = Number(x.toPrecision(p));
    if (Math.fround(candidate) === Math.fround(x)) { text = String(candidate); break; }
  }
  return /^-?\d+$/.test(text) ? `${text}.0` : text;
}

/** Append text to the cell's stdout/stderr block (one <pre> per stream, kept in order). */
function appendText(output, stream, text) {
  if (!text) return;
  let pre = output.lastElementChild;
  if (!pre || !pre.classList.contains('stream') || !pre.classList.contains(stream)) {
    pre = el('pre', { class: `stream ${stream}`, 'aria-label': stream });
    output.append(pre);
  }
  pre.append(text); // a new text node: appending never re-serialises what is shown
}

const count = (n) => n.toLocaleString('en-US');

/** "… 1,234 lines dropped (56,789 characters)": what the worker left out of a long output. */
function droppedText({ lines, chars }, final) {
  const what = lines > 0 ? `${count(lines)} lines dropped (${count(chars)} characters)`
    : `${count(chars)} characters dropped`;
  return final ? `… ${what}: the first and the last lines are shown`
    : `… ${what} so far: the last lines follow when the run ends`;
}

/**
 * A batch of the run's output from the worker (web/run-output.mjs): text as it came, a note of
 * what was dropped past the kept head, and at the end the kept tail after that note.
 * @param {HTMLElement} output @param {import('./run-output.mjs').Batch} batch
 */
export function appendBatch(output, batch) {
  for (const { stream, text } of batch.segments) appendText(output, stream, text);
  if (!batch.dropped) return;
  let note = output.querySelector(':scope > p.dropped');
  if (!note) {
    note = el('p', { class: 'summary dropped' });
    output.append(note);
  }
  note.textContent = droppedText(batch.dropped, Boolean(batch.final));
  for (const { stream, text } of batch.tail ?? []) appendText(output, stream, text);
}

/** Rows of a tensor for display: rank ≤ 1 one row, rank 2 a matrix, higher ranks by last axis. */
function tableRows(shape, data) {
  const cols = shape.length === 0 ? 1 : shape[shape.length - 1];
  const rows = [];
  for (let r = 0; r * cols < Math.max(data.length, 1); r += 1) rows.push(data.slice(r * cols, (r + 1) * cols));
  return { rows, cols };
}

/** One output as a captioned table: "name — shape [2, 3] float32". A scalar is one cell,
 * a vector one row with its indices, higher ranks one row per index of all but the last axis. */
export function tensorTable({ name, shape, dtype = 'float32', data }) {
  const { rows, cols } = tableRows(shape, Array.from(data));
  const table = el('table', { class: 'tensor' });
  table.append(el('caption', { text: `${name} — shape [${shape.join(', ')}] ${dtype}` }));
  const rowHeaders = shape.length >= 2;
  const shownCols = Math.min(cols, MAX_COLS);
  if (shape.length >= 1) {
    const head = el('tr', {}, rowHeaders ? [el('th', { text: '', scope: 'col' })] : []);
    for (let c = 0; c < shownCols; c += 1) head.append(el('th', { text: String(c), scope: 'col' }));
    if (cols > shownCols) head.append(el('th', { text: '…', scope: 'col' }));
    table.append(el('thead', {}, [head]));
  }
  const body = el('tbody');
  rows.slice(0, MAX_ROWS).forEach((row, r) => {
    const tr = el('tr', {}, rowHeaders ? [el('th', { text: rowLabel(shape, r), scope: 'row' })] : []);
    for (let c = 0; c < shownCols; c += 1) tr.append(el('td', { text: formatFloat32(row[c]) }));
    if (cols > shownCols) tr.append(el('td', { text: '…' }));
    body.append(tr);
  });
  table.append(body);
  const wrap = el('figure', { class: 'tensor-wrap' }, [table]);
  if (rows.length > MAX_ROWS || cols > shownCols) {
    wrap.append(el('figcaption', {
      text: `showing ${Math.min(rows.length, MAX_ROWS)} of ${rows.length} rows, ${shownCols} of ${cols} columns`,
    }));
  }
  return wrap;
}

/** Row r of a tensor viewed as rows of its last axis: "3" (rank 2) or "1, 0" (rank 3). */
function rowLabel(shape, r) {
  const lead = shape.slice(0, -1);
  const index = [];
  for (let i = lead.length - 1, rest = r; i >= 0; i -= 1) {
    index.unshift(rest % lead[i]);
    rest = Math.floor(rest / lead[i]);
  }
  return index.join(', ');
}

/** A result: backend line + one table per output. */
export function renderTable(output, { title, backend, outputs, software, ms }) {
  const block = el('div', { class: 'result' });
  const time = typeof ms === 'number' ? ` in ${ms < 10 ? ms.toFixed(2) : ms.toFixed(1)} ms` : '';
  const label = `${title ? `${title} — ` : ''}ran on ${backend ?? '?'}${software ? ' (software adapter)' : ''}${time}`;
  block.append(el('p', { class: 'result-backend', text: label }));
  for (const o of outputs) block.append(tensorTable(o));
  output.append(block);
}

export function renderText(output, { text }) {
  output.append(el('pre', { class: 'value', text }));
}

/** Find or create the named canvas block of a cell (repeated draws update it in place). */
function namedCanvas(output, kind, name, width, height) {
  const key = `${kind}:${name}`;
  let figure = [...output.querySelectorAll('figure.drawing')].find((f) => f.dataset.key === key);
  if (!figure) {
    const canvas = el('canvas', { width, height, role: 'img', 'aria-label': `${kind} ${name}` });
    figure = el('figure', { class: 'drawing', 'data-key': key }, [canvas, el('figcaption')]);
    output.append(figure);
  }
  const canvas = figure.querySelector('canvas');
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
  return { figure, canvas };
}

/** A 2-D grid of bytes (0 dark .. 255 light), each value a `scale`-pixel square. */
export function renderCanvas(output, { name, title, width, height, scale, pixels }) {
  const { figure, canvas } = namedCanvas(output, 'canvas', name, width * scale, height * scale);
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(width, height);
  for (let i = 0; i < width * height; i += 1) {
    const v = pixels[i];
    // light cells in the page's accent colour, dark cells near-black
    image.data[4 * i] = 16 + (v * 80) / 255;
    image.data[4 * i + 1] = 20 + (v * 200) / 255;
    image.data[4 * i + 2] = 28 + (v * 140) / 255;
    image.data[4 * i + 3] = 255;
  }
  const small = new OffscreenCanvas(width, height);
  small.getContext('2d').putImageData(image, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(small, 0, 0, width * scale, height * scale);
  figure.querySelector('figcaption').textContent = title ?? `${name} (${height}×${width})`;
  canvas.setAttribute('aria-label', `${name}: ${title ?? `${height}×${width} grid`}`);
}

/** A named progress bar (a download: `display.progress`); drawn again under its name, it is
 * updated in place. {name, label, done, total} in bytes. */
export function renderProgress(output, { name, label, done, total }) {
  let box = [...output.querySelectorAll('.progress-output')].find((n) => n.dataset.name === name);
  if (!box) {
    box = el('div', { class: 'progress-output', 'data-name': name });
    box.append(el('span', { class: 'label' }), el('progress', { max: 1, value: 0 }), el('span', { class: 'amount' }));
    output.append(box);
  }
  const bar = box.querySelector('progress');
  bar.max = total;
  bar.value = done;
  bar.setAttribute('aria-label', label || name);
  box.querySelector('.label').textContent = `${label || name} `;
  const mb = (n) => (n / 1e6).toFixed(1);
  box.querySelector('.amount').textContent = ` ${mb(done)} / ${mb(total)} MB`;
  box.dataset.done = String(done >= total);
}

/** A file picker a cell waits on (`display.pick_file`): the chosen File goes to the worker
 * through a bubbling `gpulab-file` event {id, file} that the page forwards (app.mjs). One pick:
 * the input is disabled once a file is chosen. {id, accept, label}. */
export function renderFilePicker(output, { id, accept, label }) {
  const input = el('input', { type: 'file', accept: accept || '', 'aria-label': label });
  input.addEventListener('change', () => {
    const file = input.files?.[0];
    if (!file) return;
    input.disabled = true;
    input.dispatchEvent(new CustomEvent('gpulab-file', { bubbles: true, detail: { id, file } }));
  });
  output.append(el('div', { class: 'file-picker' }, [el('span', { class: 'label', text: `${label} ` }), input]));
}

/** A PNG picture (from an imported .ipynb): an <img> of a data: URL of base64 checked text. */
export function renderImage(output, { png, alt }) {
  const img = el('img', { src: `data:image/png;base64,${png}`, alt: alt || 'image', class: 'imported' });
  output.append(el('figure', { class: 'picture' }, [img]));
}

/** A Python error: type and message, the traceback, and the cell line it points at. */
export function renderError(output, error, editorLines) {
  const box = el('div', { class: 'error', role: 'alert' });
  const where = error.line ? ` (line ${error.line})` : '';
  const context = error.title ? ` ${error.title}` : '';
  // a WGSL error: its first line in the title, the shader's line shown marked below
  const wgsl = parseWgslError(error.message);
  const message = wgsl ? wgsl.head : error.message;
  box.append(el('p', { class: 'error-title', text: `${error.type}${where}${context}: ${message}` }));
  if (wgsl) renderWgslError(box, error.message);
  if (error.line && editorLines?.[error.line - 1] !== undefined) {
    box.append(el('pre', { class: 'error-line', text: `${String(error.line).padStart(4)} │ ${editorLines[error.line - 1]}` }));
  }
  if (error.traceback) box.append(el('pre', { class: 'traceback', text: error.traceback }));
  output.append(box);
}
