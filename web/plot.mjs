// Line plots of `display.plot` through uPlot (npm `uplot`, pinned in package.json, served from
// web/vendor/npm/ like CodeMirror): several series, axes with ticks, and a legend that shows
// each series' value under the cursor. Why uPlot: ~50 KB minified with no dependencies, draws on
// a canvas (so a plot exports as PNG like the Life canvas), MIT, maintained, and its ES module
// loads offline with no build step. A plot is a named figure: calling `display.plot` again with
// the same name gives the chart new data in place (no flicker), so a training loop animates.
import uPlot from './vendor/npm/uPlot.esm.js';
import { el } from './render.mjs';

/** Series colours: the first is the page's blue in both themes (tests look for it). */
export const SERIES_COLOURS = ['#1f6feb', '#e8590c', '#2f9e44', '#ae3ec9', '#f59f00', '#0c8599'];
const HEIGHT = 240;
const MAX_WIDTH = 560;

/** @typedef {{label: string, ys: Array<number|null>}} Series */
/** @typedef {{name: string, title?: string, xlabel?: string, ylabel?: string,
 *   xs: number[], series: Series[]}} PlotPayload */

/**
 * The plot's series from a payload; a payload of the first version ({xs, ys}, still in stored
 * notebooks) is one series.
 * @param {any} payload @returns {PlotPayload}
 */
export function normalise(payload) {
  const finite = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const series = Array.isArray(payload.series) ? payload.series
    : [{ label: payload.ylabel || payload.name || 'values', ys: payload.ys ?? [] }];
  const rows = series.map((s, i) => ({ label: String(s.label ?? `series ${i + 1}`), ys: Array.from(s.ys ?? [], finite) }));
  const longest = Math.max(0, ...rows.map((s) => s.ys.length));
  const xs = Array.isArray(payload.xs) && payload.xs.length ? Array.from(payload.xs, Number)
    : Array.from({ length: longest }, (_, i) => i);
  // uPlot wants every series as long as x: pad a shorter one with gaps
  for (const s of rows) while (s.ys.length < xs.length) s.ys.push(null);
  return { ...payload, xs, series: rows, indexX: !(Array.isArray(payload.xs) && payload.xs.length) };
}

/** A tick or legend number: 4 significant digits, exponents for tiny and huge values. */
export function formatValue(v) {
  if (v === null || v === undefined) return '—';
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(2) : String(Number(v.toPrecision(4)));
}

/** The page's theme colours (light or dark, style.css), read when a chart is made. */
function theme(node) {
  const css = getComputedStyle(node);
  const read = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  return { ink: read('--ink', '#222'), muted: read('--muted', '#555'), grid: read('--soft-border', '#e3e7eb') };
}

/** Steps of an x axis of indices 0..n-1: whole numbers only (no tick at 0.25). */
const INDEX_STEPS = [1, 2, 5].flatMap((m) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6].map((p) => m * p)).sort((a, b) => a - b);

function axis(colours, label, incrs) {
  return {
    ...(incrs ? { incrs } : {}),
    label: label || undefined,
    stroke: colours.ink,
    grid: { stroke: colours.grid, width: 1 },
    ticks: { stroke: colours.muted, width: 1 },
    values: (u, splits) => splits.map(formatValue),
  };
}

function options(p, width, colours) {
  return {
    width,
    height: HEIGHT,
    title: p.title || undefined,
    scales: { x: { time: false } },
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    axes: [axis(colours, p.xlabel, p.indexX ? INDEX_STEPS : undefined), axis(colours, p.ylabel)],
    series: [
      { label: p.xlabel || 'x', value: (u, v) => formatValue(v) },
      ...p.series.map((s, i) => ({
        label: s.label,
        stroke: SERIES_COLOURS[i % SERIES_COLOURS.length],
        width: 2,
        spanGaps: false,
        value: (u, v) => formatValue(v),
      })),
    ],
  };
}

const charts = new WeakMap(); // figure -> {chart, labels}

function describe(figure, p) {
  const points = p.xs.length;
  const last = p.series.map((s) => `${s.label} ${formatValue(s.ys.findLast((v) => v !== null) ?? null)}`).join(', ');
  const text = `${p.title || p.name}: ${points} point${points === 1 ? '' : 's'}, last ${last}`;
  figure.querySelector('figcaption').textContent = text;
  const root = figure.querySelector('.plot-root');
  root.setAttribute('aria-label', `plot ${p.name}: ${text}`);
  root.dataset.points = String(points);
  root.dataset.series = String(p.series.length);
}

/**
 * Draw (or redraw in place) the plot `payload.name` in a cell's output.
 * @param {HTMLElement} output @param {any} payload
 */
export function renderPlot(output, payload) {
  const p = normalise(payload);
  const key = `plot:${p.name}`;
  let figure = [...output.querySelectorAll('figure.drawing')].find((f) => f.dataset.key === key);
  if (!figure) {
    figure = el('figure', { class: 'drawing plot', 'data-key': key },
      [el('div', { class: 'plot-root', role: 'img' }), el('figcaption')]);
    output.append(figure);
  }
  const data = [p.xs, ...p.series.map((s) => s.ys)];
  const labels = p.series.map((s) => s.label).join('\n') + `\n${p.title}\n${p.xlabel}\n${p.ylabel}`;
  const held = charts.get(figure);
  if (held && held.labels === labels) {
    held.chart.setData(data);
  } else {
    held?.chart.destroy();
    const root = figure.querySelector('.plot-root');
    const width = Math.max(240, Math.min(MAX_WIDTH, (output.clientWidth || MAX_WIDTH) - 4));
    const chart = new uPlot(options(p, width, theme(output)), data, root);
    charts.set(figure, { chart, labels });
  }
  describe(figure, p);
}

/**
 * The plot as one PNG (base64, no data: prefix) for the .ipynb export: the title, the chart's
 * canvas (lines and axes) and a legend of the series' colours, on the theme's panel colour.
 * @param {HTMLElement} figure a plot's figure (`figure.plot`) @returns {string}
 */
export function plotPng(figure) {
  const chart = figure.querySelector('.plot-root canvas');
  if (!chart) return '';
  const held = charts.get(figure)?.chart;
  const labels = held ? held.series.slice(1).map((s) => s.label) : [];
  const title = held?.root.querySelector('.u-title')?.textContent ?? '';
  const css = getComputedStyle(figure);
  const ratio = chart.width / Math.max(1, chart.clientWidth || chart.width);
  const pad = Math.round(24 * ratio);
  const out = document.createElement('canvas');
  out.width = chart.width;
  out.height = chart.height + 2 * pad;
  const ctx = out.getContext('2d');
  ctx.fillStyle = css.getPropertyValue('--panel').trim() || '#fff';
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.fillStyle = css.getPropertyValue('--ink').trim() || '#222';
  ctx.font = `bold ${Math.round(14 * ratio)}px system-ui, sans-serif`;
  ctx.textAlign = 'center';
  ctx.fillText(title, out.width / 2, pad * 0.7);
  ctx.drawImage(chart, 0, pad);
  ctx.font = `${Math.round(12 * ratio)}px system-ui, sans-serif`;
  ctx.textAlign = 'left';
  let x = pad;
  labels.forEach((label, i) => {
    ctx.fillStyle = SERIES_COLOURS[i % SERIES_COLOURS.length];
    ctx.fillRect(x, out.height - pad * 0.7, pad * 0.5, pad * 0.4);
    ctx.fillStyle = css.getPropertyValue('--ink').trim() || '#222';
    ctx.fillText(label, x + pad * 0.7, out.height - pad * 0.3);
    x += pad * 1.2 + ctx.measureText(label).width;
  });
  return out.toDataURL('image/png').replace(/^data:image\/png;base64,/, '');
}
