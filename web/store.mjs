// Named notebooks in localStorage, one key each, plus an index; the notebook a tab shows is
// remembered per tab (sessionStorage) and held with a Web Lock, so two tabs never write the same
// notebook (the second one opens a copy instead of overwriting the first one's work).
//
//   gpulab-notebooks          [{id, name, updated}]   (the list, newest first)
//   gpulab-notebook:<id>      {name, cells: [{source, log}]}   (log: the cell's outputs)
//   sessionStorage gpulab-tab-notebook   the id this tab shows (survives a reload of the tab)

const INDEX = 'gpulab-notebooks';
const PREFIX = 'gpulab-notebook:';
const TAB = 'gpulab-tab-notebook';
const LEGACY = 'gpulab-playground-cells'; // the old single unnamed notebook's sources

/** @typedef {{id: string, name: string, updated: number}} Entry */
/** @typedef {{source: string, log?: any[]}} StoredCell */
/** @typedef {{name: string, cells: StoredCell[]}} StoredNotebook */

function readJson(storage, key, fallback) {
  try {
    return JSON.parse(storage.getItem(key) ?? 'null') ?? fallback;
  } catch {
    return fallback;
  }
}

/** @returns {Entry[]} */
export function listNotebooks() {
  const entries = readJson(localStorage, INDEX, []);
  return Array.isArray(entries) ? entries.filter((e) => e && typeof e.id === 'string') : [];
}

function writeIndex(entries) {
  entries.sort((a, b) => b.updated - a.updated);
  localStorage.setItem(INDEX, JSON.stringify(entries));
}

/** @returns {StoredNotebook|null} */
export function loadNotebook(id) {
  const nb = readJson(localStorage, PREFIX + id, null);
  return nb && Array.isArray(nb.cells) ? nb : null;
}

/**
 * Save a notebook; outputs are dropped first if the storage is full (sources matter most).
 * @returns {'saved'|'saved without outputs'|'not saved'}
 */
export function saveNotebook(id, notebook) {
  const attempts = [notebook, { ...notebook, cells: notebook.cells.map(({ source }) => ({ source })) }];
  for (const [i, nb] of attempts.entries()) {
    try {
      localStorage.setItem(PREFIX + id, JSON.stringify(nb));
      const entries = listNotebooks().filter((e) => e.id !== id);
      entries.push({ id, name: nb.name, updated: Date.now() });
      writeIndex(entries);
      return i === 0 ? 'saved' : 'saved without outputs';
    } catch { /* quota: try without outputs */ }
  }
  return 'not saved';
}

/** Remove a notebook; returns what it held (for Undo). */
export function removeNotebook(id) {
  const notebook = loadNotebook(id);
  localStorage.removeItem(PREFIX + id);
  writeIndex(listNotebooks().filter((e) => e.id !== id));
  return notebook;
}

export function newId() {
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** "Untitled 3": the first name of that form not in the list. */
export function freshName(base = 'Untitled') {
  const names = new Set(listNotebooks().map((e) => e.name));
  for (let n = 1; ; n += 1) if (!names.has(`${base} ${n}`)) return `${base} ${n}`;
}

export function tabNotebook() {
  return sessionStorage.getItem(TAB);
}

export function setTabNotebook(id) {
  sessionStorage.setItem(TAB, id);
}

/** The sources kept by the page before named notebooks, as a notebook (once). */
export function legacyNotebook() {
  const sources = readJson(localStorage, LEGACY, null);
  if (!Array.isArray(sources) || !sources.every((s) => typeof s === 'string')) return null;
  localStorage.removeItem(LEGACY);
  return { name: 'My notebook', cells: sources.map((source) => ({ source })) };
}

// ---------------------------------------------------------------------------------------------
// One tab per notebook: a Web Lock named after the notebook, held while the tab shows it.

/** Locks this tab holds or has asked for: id -> {release(), wanted} */
const held = new Map();

function releaseAllBut(id) {
  for (const [other, lock] of held) {
    if (other === id) continue;
    lock.wanted = false;
    lock.release?.();
    held.delete(other);
  }
}

/** Hold notebook `id` for this tab (and let go of the one it showed); false if another tab
 * holds it. */
export async function claim(id) {
  if (!navigator.locks) return true; // no Web Locks: tabs are not isolated (old browsers)
  releaseAllBut(id);
  if (held.has(id)) return true;
  const lock = { release: null, wanted: true };
  held.set(id, lock);
  return new Promise((resolve) => {
    navigator.locks.request(`gpulab-notebook:${id}`, { ifAvailable: true }, (granted) => {
      if (!granted) { if (held.get(id) === lock) held.delete(id); resolve(false); return undefined; }
      resolve(true);
      if (!lock.wanted) return undefined; // this tab moved on before the lock came
      return new Promise((done) => { lock.release = done; });
    });
  });
}
