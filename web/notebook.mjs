// Notebook cells: a code editor (CodeMirror 6, editor.mjs), Run / Compare / Delete buttons, and
// a labelled output region. Keys: Tab indents (Shift+Tab dedents), Shift+Enter runs and moves to
// the next cell, Ctrl/Cmd+Enter runs in place, Esc leaves the editor.
import { el } from './render.mjs';
import { replay } from './cell-output.mjs';
import { renderMarkdown } from './markdown.mjs';
import { createEditor } from './editor.mjs';


/**
 * @typedef {{id: number, root: HTMLElement, editor: ReturnType<typeof createEditor>, output: HTMLElement,
 *            prompt: HTMLElement, runButton: HTMLButtonElement, compareButton: HTMLButtonElement,
 *            compare: HTMLElement, label: string, runs: number, log: any[], logChars: number,
 *            source(): string}} Cell
 * @typedef {{onRun(cell: Cell): void, onCompare(cell: Cell): void,
 *            onDelete?(removed: {index: number, source: string, log: any[]}): void}} Handlers
 */

export class Notebook {
  /** @param {HTMLElement} container @param {Handlers} handlers */
  constructor(container, handlers) {
    this.container = container;
    this.handlers = handlers;
    /** @type {Cell[]} */
    this.cells = [];
    this.nextId = 1;
    /** Called after any edit, added or deleted cell (the page saves the sources). */
    this.onChange = () => {};
  }

  /** Add a cell after `after` (or at the end); returns it. */
  addCell(code = '', after = null) {
    return this.insertCell(after ? this.cells.indexOf(after) + 1 : this.cells.length, code);
  }

  /** Insert a cell at `index` (its stored output `log` shown again, for Undo and reloads). */
  insertCell(index, code = '', log = null, kind = 'code') {
    const cell = this.buildCell(code);
    if (kind === 'markdown') setKind(cell, 'markdown', Boolean(code.trim()));
    this.cells.splice(index, 0, cell);
    const next = this.cells[index + 1];
    if (next) this.container.insertBefore(cell.root, next.root);
    else this.container.append(cell.root);
    this.renumber();
    if (log) replay(cell, log);
    this.onChange();
    return cell;
  }

  /** Remove a cell; the page offers Undo with what it held ({index, source, log}). */
  deleteCell(cell) {
    const index = this.cells.indexOf(cell);
    if (index < 0) return;
    const removed = { index, source: cell.source(), log: cell.log, kind: cell.kind };
    this.cells.splice(index, 1);
    cell.root.remove();
    if (this.cells.length === 0) this.addCell();
    this.renumber();
    this.onChange();
    (this.cells[Math.min(index, this.cells.length - 1)]).editor.focus();
    this.handlers.onDelete?.(removed);
  }

  /** Replace every cell with stored cells ({source, log}). */
  load(cells) {
    for (const cell of this.cells) cell.root.remove();
    this.cells = [];
    for (const { source, log, kind } of cells) this.insertCell(this.cells.length, source, log, kind);
  }

  /** The cells as stored: source and output log. */
  serialize() {
    return this.cells.map((cell) => ({ source: cell.source(), log: cell.log, kind: cell.kind }));
  }

  renumber() {
    this.cells.forEach((cell, i) => {
      cell.label = `Cell ${i + 1}`;
      cell.root.setAttribute('aria-label', cell.label);
      cell.editor.setLabel(`Code of cell ${i + 1}`);
      cell.output.setAttribute('aria-label', `Output of cell ${i + 1}`);
      cell.compare.setAttribute('aria-label', `Comparison of cell ${i + 1}`);
      cell.deleteButton.setAttribute('aria-label', `Delete cell ${i + 1}`);
      cell.kindButton.setAttribute('aria-label', `Cell ${i + 1} type`);
      cell.rendered.setAttribute('aria-label', `Text of cell ${i + 1}`);
    });
  }

  /** The cell after `cell`, created when `cell` is the last one. */
  nextCell(cell) {
    const index = this.cells.indexOf(cell);
    return this.cells[index + 1] ?? this.addCell('', cell);
  }

  buildCell(code) {
    const id = this.nextId++;
    const editorBox = el('div', { class: 'editor' });
    /** @type {any} */ let cell = null;
    const editor = createEditor(editorBox, code, {
      onChange: () => this.onChange(),
      onRun: () => this.handlers.onRun(cell),
      onRunNext: () => { this.handlers.onRun(cell); this.nextCell(cell).editor.focus(); },
      onEscape: () => cell.runButton.focus(), // keyboard users leave the editor (then Tab on)
    });
    const prompt = el('span', { class: 'prompt', text: '[ ]', 'aria-label': 'run state' });
    const runButton = el('button', { class: 'run', text: 'Run', type: 'button', title: 'Run (Ctrl+Enter; Shift+Enter runs and moves on)' });
    const compareButton = el('button', { class: 'compare-btn', text: 'Compare with native', type: 'button', disabled: true, title: 'Run this cell\'s last graph natively (wgpu-py or cpu-python) and compare in ulps' });
    const addButton = el('button', { class: 'add', text: '+ Cell below', type: 'button' });
    const deleteButton = el('button', { class: 'delete', text: 'Delete', type: 'button' });
    const kindButton = el('button', { class: 'kind', text: 'Markdown', type: 'button', title: 'Make this a markdown (text) cell / a code cell' });
    const rendered = el('div', { class: 'markdown', role: 'region', hidden: true, title: 'Double-click to edit' });
    const output = el('div', { class: 'output', role: 'region' });
    const compare = el('div', { class: 'compare', role: 'region', hidden: true });
    const root = el('section', { class: 'cell', 'data-cell-id': String(id) }, [
      el('div', { class: 'cell-bar' }, [prompt, runButton, compareButton, el('span', { class: 'spacer' }), kindButton, addButton, deleteButton]),
      editorBox, rendered, output, compare,
    ]);
    /** @type {Cell} */
    cell = { id, root, editor, output, prompt, runButton, compareButton, compare, deleteButton,
      label: '', runs: 0, log: [], logChars: 0, source: () => editor.value, kind: 'code', kindButton, rendered };
    runButton.addEventListener('click', () => this.handlers.onRun(cell));
    compareButton.addEventListener('click', () => this.handlers.onCompare(cell));
    addButton.addEventListener('click', () => this.addCell('', cell).editor.focus());
    deleteButton.addEventListener('click', () => this.deleteCell(cell));
    kindButton.addEventListener('click', () => {
      setKind(cell, cell.kind === 'code' ? 'markdown' : 'code', false);
      this.onChange();
    });
    rendered.addEventListener('dblclick', () => { showMarkdown(cell, false); editor.focus(); });
    return cell;
  }
}

/** Make `cell` a code or markdown cell; a markdown cell shows its text rendered when `show`. */
function setKind(cell, kind, show) {
  cell.kind = kind;
  cell.root.classList.toggle('markdown-cell', kind === 'markdown');
  cell.kindButton.textContent = kind === 'code' ? 'Markdown' : 'Code';
  cell.runButton.textContent = kind === 'code' ? 'Run' : 'Render';
  cell.compareButton.hidden = kind === 'markdown';
  cell.prompt.textContent = kind === 'code' ? '[ ]' : 'text';
  if (kind === 'markdown') cell.output.replaceChildren();
  showMarkdown(cell, kind === 'markdown' && show);
}

/** Markdown cells: the rendered text (Render, Shift+Enter) or the editor (double-click). */
export function showMarkdown(cell, show) {
  if (show) cell.rendered.replaceChildren(renderMarkdown(cell.source()));
  cell.rendered.hidden = !show;
  cell.editor.hidden = show;
}
