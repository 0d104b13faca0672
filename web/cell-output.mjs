// A cell's output, rendered and recorded at once, so that a reload shows it again: each thing
// shown is a log entry {kind, payload} that the same renderers replay. A canvas or plot drawn
// again under its name replaces its entry (a 60-frame animation keeps one frame).
import { renderPlot } from './plot.mjs';
import {
  appendBatch, el, renderCanvas, renderError, renderFilePicker, renderImage, renderProgress,
  renderTable, renderText,
} from './render.mjs';

/** Kept characters of one cell's log (stream text mostly); past it outputs are not kept. */
const MAX_LOG_CHARS = 400_000;

const RENDERERS = {
  stream: (cell, batch) => appendBatch(cell.output, batch),
  table: (cell, p) => renderTable(cell.output, p),
  text: (cell, p) => renderText(cell.output, p),
  canvas: (cell, p) => renderCanvas(cell.output, p),
  plot: (cell, p) => renderPlot(cell.output, p),
  progress: (cell, p) => renderProgress(cell.output, p), // a download's bar (display.progress)
  image: (cell, p) => renderImage(cell.output, p), // a picture an imported .ipynb brought
  file: (cell, p) => renderFilePicker(cell.output, p), // display.pick_file: live, never kept
  error: (cell, p) => renderError(cell.output, p, cell.source().split('\n')),
  /** a line of the page's own: {text, class, role} (summaries, "Stopped by the user", hints) */
  line: (cell, p) => cell.output.append(el('p', { class: p.class, role: p.role ?? 'none', text: p.text })),
};

function toBase64(bytes) {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

function fromBase64(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** JSON-safe copy of a payload (canvas pixels as base64). */
function storable(kind, payload) {
  if (kind === 'canvas') return { ...payload, pixels: toBase64(payload.pixels) };
  return payload;
}

/** Show `payload` in the cell and keep it in the cell's log. */
export function emit(cell, kind, payload) {
  RENDERERS[kind]?.(cell, payload);
  if (kind === 'file') return; // a picker answers the run that asked: a replayed one could not
  const entry = { kind, payload: storable(kind, payload) };
  if (kind === 'canvas' || kind === 'plot' || kind === 'progress') {
    const same = cell.log.findIndex((e) => e.kind === kind && e.payload.name === payload.name);
    if (same >= 0) { cell.log[same] = entry; return; }
  }
  cell.logChars = (cell.logChars ?? 0) + JSON.stringify(entry).length;
  if (cell.logChars <= MAX_LOG_CHARS) cell.log.push(entry);
}

/** A line of the page's own (summary, status, hint), shown and kept. */
export function emitLine(cell, text, className = 'summary', role = undefined) {
  emit(cell, 'line', { text, class: className, role });
}

export function clearOutput(cell) {
  cell.output.replaceChildren();
  cell.log = [];
  cell.logChars = 0;
}

/** Show a stored log again (after a reload or Undo); marks the output as from before. */
export function replay(cell, log) {
  clearOutput(cell);
  for (const entry of Array.isArray(log) ? log : []) {
    const payload = entry.kind === 'canvas' ? { ...entry.payload, pixels: fromBase64(entry.payload.pixels) } : entry.payload;
    try {
      RENDERERS[entry.kind]?.(cell, payload);
      cell.log.push(entry);
    } catch { /* an entry this version cannot show: leave it out */ }
  }
  cell.logChars = JSON.stringify(cell.log).length;
}
