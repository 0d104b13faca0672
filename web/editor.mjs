// The cell editor: CodeMirror 6 (vendored from npm, see index.html's import map) with Python
// highlighting, auto-indent after `:`, bracket matching and closing, undo that includes
// indentation, Tab / Shift-Tab (indent, dedent), Esc to leave the editor (then Tab moves on, as
// keyboard users expect), Ctrl/Cmd+Enter and Shift+Enter to run, and completion of the gpulab API
// (Graph methods, and Tensor methods from the op table, which every language reads).
import { Compartment, EditorState, Prec } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, keymap } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap, indentLess, indentMore } from '@codemirror/commands';
import { bracketMatching, indentOnInput, indentUnit, syntaxHighlighting } from '@codemirror/language';
import {
  autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap, completionStatus,
} from '@codemirror/autocomplete';
import { python, pythonLanguage } from '@codemirror/lang-python';
import { codeHighlight } from './editor-theme.mjs';

const GRAPH_METHODS = ['tensor', 'input', 'full', 'run', 'run_async', 'submit', 'prepare',
  'prepare_async', 'sgd', 'momentum', 'adam', 'to_dict'];
const SESSION_METHODS = ['run', 'run_async', 'run_steps', 'run_steps_async', 'download',
  'download_async', 'dispose', 'steps_run', 'backend'];
const TENSOR_EXTRA = ['shape', 'dtype', 'ndim', 'size', 'id', 'graph'];

/** Tensor methods: the op table's ops (less the graph-level sources), fetched once. */
let tensorMethods = null;
async function opNames() {
  if (!tensorMethods) {
    tensorMethods = fetch(new URL('../backends-js/src/ops.json', import.meta.url))
      .then((r) => r.json())
      .then((table) => Object.keys(table.ops).filter((op) => !['input', 'full'].includes(op)))
      .catch(() => []);
  }
  return tensorMethods;
}

/** `g.` / `x.` / `s.` completions; the receiver's kind is guessed from how it was made. */
async function gpulabCompletions(context) {
  const word = context.matchBefore(/\w+\.\w*$/);
  if (!word) return null;
  const [receiver] = word.text.split('.');
  const doc = context.state.doc.toString();
  const made = new RegExp(`\\b${receiver}\\s*=\\s*(?:await\\s+)?([\\w.]+)\\(`).exec(doc)?.[1] ?? '';
  let names;
  if (/(^|\.)Graph$/.test(made)) names = GRAPH_METHODS;
  else if (/\.prepare(_async)?$/.test(made)) names = SESSION_METHODS;
  else names = [...new Set([...(await opNames()), ...TENSOR_EXTRA, ...GRAPH_METHODS])];
  return {
    from: word.from + receiver.length + 1,
    options: names.map((label) => ({ label, type: 'method', detail: 'gpulab' })),
    validFor: /^\w*$/,
  };
}

/** Esc leaves the editor (an open completion list closes first). */
function leave(view, handlers) {
  if (completionStatus(view.state) !== null) return false;
  view.contentDOM.blur();
  handlers.onEscape();
  return true;
}

/**
 * An editor in `parent`. Returns {view, value, focus(), setLabel(text), setHidden(flag)}.
 * @param {HTMLElement} parent @param {string} doc
 * @param {{onChange(): void, onRun(): void, onRunNext(): void, onEscape(): void}} handlers
 */
export function createEditor(parent, doc, handlers) {
  const label = new Compartment();
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        label.of(EditorView.contentAttributes.of({ 'aria-label': 'Code' })),
        Prec.highest(keymap.of([
          { key: 'Mod-Enter', run: () => { handlers.onRun(); return true; } },
          { key: 'Shift-Enter', run: () => { handlers.onRunNext(); return true; } },
          { key: 'Escape', run: (v) => leave(v, handlers) },
        ])),
        history(),
        drawSelection(),
        highlightActiveLine(),
        indentOnInput(),
        indentUnit.of('    '),
        EditorState.tabSize.of(4),
        bracketMatching(),
        closeBrackets(),
        autocompletion(),
        python(),
        pythonLanguage.data.of({ autocomplete: gpulabCompletions }),
        syntaxHighlighting(codeHighlight), // colours from style.css, light and dark
        keymap.of([
          ...closeBracketsKeymap, ...completionKeymap, ...historyKeymap,
          { key: 'Tab', run: indentMore, shift: indentLess },
          ...defaultKeymap,
        ]),
        EditorView.updateListener.of((update) => { if (update.docChanged) handlers.onChange(); }),
        EditorView.theme({ '&': { fontSize: '14px' }, '.cm-content': { fontFamily: 'var(--mono)' } }),
      ],
    }),
  });
  return {
    view,
    get value() { return view.state.doc.toString(); },
    set value(text) { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }); },
    focus() { view.focus(); },
    setLabel(text) { view.dispatch({ effects: label.reconfigure(EditorView.contentAttributes.of({ 'aria-label': text })) }); },
    set hidden(flag) { parent.hidden = flag; }, // (.cm-editor is display: flex)
    get hidden() { return parent.hidden; },
  };
}
