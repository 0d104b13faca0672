// The notebook list: which notebook this tab shows, its name, New / an Example (each opens a
// new notebook: nothing is ever replaced), Delete with Undo, saving (debounced) and the Undo
// bar that every destructive action offers. Storage and the one-tab-per-notebook lock are in
// store.mjs.
import { el } from './render.mjs';
import { fromIpynb, toIpynb, toPy } from './ipynb.mjs';
import {
  claim, freshName, legacyNotebook, listNotebooks, loadNotebook, newId, removeNotebook,
  saveNotebook, setTabNotebook, tabNotebook,
} from './store.mjs';

const SAVE_DELAY_MS = 300;

/**
 * @param {{notebook: import('./notebook.mjs').Notebook, examples: Array<{id: string, title: string, cells: string[]}>,
 *          isBusy: () => boolean}} deps
 */
export function createNotebooks({ notebook, examples, isBusy }) {
  const $ = (id) => /** @type {any} */ (document.getElementById(id));
  const ui = {
    select: $('notebooks'), name: $('notebook-name'), examples: $('examples'),
    toast: $('toast'), toastText: $('toast-text'), undo: $('undo'), note: $('notebook-note'),
  };
  let current = { id: '', name: '' };
  let saveTimer = null;
  let undoAction = null;

  /** @returns {'saved'|'saved without outputs'|'not saved'|undefined} (undefined: nothing shown) */
  function save() {
    clearTimeout(saveTimer);
    saveTimer = null;
    if (!current.id) return undefined;
    const outcome = saveNotebook(current.id, { name: current.name, cells: notebook.serialize() });
    if (outcome !== 'saved') ui.note.textContent = `Storage is full: notebook ${outcome}.`;
    refreshList();
    return outcome;
  }

  function saveSoon() {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(save, SAVE_DELAY_MS);
  }

  function refreshList() {
    const entries = listNotebooks();
    if (current.id && !entries.some((e) => e.id === current.id)) entries.unshift({ id: current.id, name: current.name });
    ui.select.replaceChildren(...entries.map((e) => el('option', { value: e.id, text: e.name })));
    ui.select.value = current.id;
  }

  /** Show notebook `id` (held by this tab); another tab's notebook opens as a copy. A new
   * notebook (`fresh`) is shown at once: no other tab can hold its new id. Returns how its
   * save went (undefined when it was not opened: a cell is running). */
  async function open(id, stored, fresh = false) {
    if (isBusy()) { ui.note.textContent = 'A cell is running: Stop it before switching notebooks.'; refreshList(); return undefined; }
    if (current.id) save();
    let nb = stored ?? loadNotebook(id) ?? { name: freshName(), cells: [{ source: '' }] };
    ui.note.textContent = '';
    if (fresh) claim(id);
    else if (!(await claim(id))) {
      ui.note.textContent = `"${nb.name}" is open in another tab: this tab works on a copy, so neither overwrites the other.`;
      nb = { ...nb, name: freshName(`${nb.name} (copy)`) };
      id = newId();
      await claim(id);
    }
    current = { id, name: nb.name };
    setTabNotebook(id);
    notebook.load(nb.cells.length ? nb.cells : [{ source: '' }]);
    ui.name.value = nb.name;
    const outcome = save();
    document.body.dataset.notebook = id; // the tests wait for this after New / Example
    return outcome;
  }

  /** A new notebook (from an example's cells, or one empty cell); the old one stays listed. */
  function create(name, sources) {
    return open(newId(), { name: freshName(name), cells: sources.map((source) => ({ source })) }, true);
  }

  function offerUndo(text, action) {
    undoAction = action;
    ui.toastText.textContent = text;
    ui.toast.hidden = false;
    ui.undo.focus();
  }

  function undo() {
    const action = undoAction;
    undoAction = null;
    ui.toast.hidden = true;
    action?.();
  }

  async function deleteCurrent() {
    if (isBusy()) { ui.note.textContent = 'A cell is running: Stop it before deleting the notebook.'; return; }
    clearTimeout(saveTimer);
    const gone = { id: current.id, notebook: { name: current.name, cells: notebook.serialize() } };
    removeNotebook(current.id);
    current = { id: '', name: '' };
    const next = listNotebooks()[0];
    if (next) await open(next.id); else await create('Untitled', ['']);
    offerUndo(`Deleted notebook "${gone.notebook.name}".`, () => open(gone.id, gone.notebook));
  }

  /** A deleted cell (notebook.mjs's onDelete) can be put back where it was, output included. */
  function cellDeleted({ index, source, log, kind }) {
    offerUndo(`Deleted cell ${index + 1}.`, () => {
      notebook.insertCell(index, source, log, kind).editor.focus();
    });
  }

  function download(filename, type, content) {
    const url = URL.createObjectURL(new Blob([content], { type }));
    const link = el('a', { href: url, download: filename });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }

  /** What an import did: stored or not (the storage-full warning kept), outputs skipped. */
  function importNote(fileName, outcome, skipped) {
    const stored = {
      saved: `Imported ${fileName} as a new notebook.`,
      'saved without outputs': `Imported ${fileName} as a new notebook, but storage is full: it was saved without its outputs.`,
      'not saved': `Opened ${fileName} as a new notebook, but storage is full: it was not saved (export it to keep it).`,
    }[outcome];
    if (!skipped.length) return stored;
    const shown = skipped.slice(0, 3).join('; ') + (skipped.length > 3 ? '; …' : '');
    const count = `${skipped.length} malformed ${skipped.length === 1 ? 'part was' : 'parts were'} skipped`;
    return `${stored} ${count} (${shown}).`;
  }

  const fileName = (ext) => `${current.name.replace(/[^\w.-]+/g, '_') || 'notebook'}.${ext}`;

  /** Import an .ipynb as a new notebook; the note says what was stored and what was skipped. */
  async function importFile(file) {
    let nb;
    try {
      nb = fromIpynb(await file.text(), file.name.replace(/\.ipynb$/i, ''));
    } catch (err) {
      ui.note.textContent = `Could not import ${file.name}: ${err.message}`;
      return;
    }
    const outcome = await open(newId(), { name: freshName(nb.name), cells: nb.cells }, true);
    if (outcome === undefined) return; // not opened: open() said why
    ui.note.textContent = importNote(file.name, outcome, nb.skipped);
  }

  $('export-ipynb').addEventListener('click', () => download(fileName('ipynb'), 'application/x-ipynb+json',
    `${JSON.stringify(toIpynb(current.name, notebook.cells), null, 1)}\n`));
  $('export-py').addEventListener('click', () => download(fileName('py'), 'text/x-python', toPy(current.name, notebook.cells)));
  const picker = $('import-ipynb');
  picker.addEventListener('change', () => {
    if (picker.files?.[0]) importFile(picker.files[0]);
    picker.value = '';
  });

  ui.select.addEventListener('change', () => open(ui.select.value));
  ui.name.addEventListener('change', () => {
    current.name = ui.name.value.trim() || current.name;
    ui.name.value = current.name;
    save();
  });
  ui.undo.addEventListener('click', undo);
  $('dismiss-toast').addEventListener('click', () => { ui.toast.hidden = true; undoAction = null; });
  $('new-notebook').addEventListener('click', async () => {
    await create('Untitled', ['']);
    notebook.cells[0].editor.focus();
  });
  $('delete-notebook').addEventListener('click', deleteCurrent);
  for (const ex of examples) ui.examples.append(el('option', { value: ex.id, text: ex.title }));
  ui.examples.addEventListener('change', async () => {
    const ex = examples.find((e) => e.id === ui.examples.value);
    ui.examples.value = '';
    if (ex) await create(ex.title.split(':')[0], ex.cells);
  });
  // Another tab saved: keep the list current (its notebooks are its own, see claim()).
  addEventListener('storage', (event) => { if (event.key === 'gpulab-notebooks') refreshList(); });
  addEventListener('pagehide', () => { if (saveTimer) save(); });
  notebook.onChange = saveSoon;

  /** This tab's notebook (kept over a reload), else the newest one, else a first notebook. */
  async function start(firstCells) {
    const legacy = legacyNotebook();
    if (legacy) saveNotebook(newId(), legacy);
    const mine = tabNotebook();
    const id = mine ?? listNotebooks()[0]?.id;
    const stored = id ? loadNotebook(id) : null;
    if (!stored) { await create('Untitled', firstCells); return; }
    // A new tab takes the newest notebook unless another tab shows it: then a new one.
    if (!mine && !(await claim(id))) {
      await create('Untitled', ['']);
      ui.note.textContent = `"${stored.name}" is open in another tab: this tab started a new notebook.`;
      return;
    }
    await open(id);
  }

  return { start, save, cellDeleted, get current() { return current; } };
}
