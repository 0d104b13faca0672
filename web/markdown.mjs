// Markdown cells: rendered by marked (vendored from npm, web/vendor/npm/) and then rebuilt
// from an allowlist of elements and attributes, so markdown never runs HTML: raw HTML in the
// text is shown as text, links only go to http(s)/mailto/#, no scripts, styles, handlers,
// images or frames (marked's HTML is parsed in an inert DOMParser document, never inserted).
import { Marked } from './vendor/npm/marked.esm.js';

const TAGS = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'em', 'strong', 'code', 'pre', 'ul',
  'ol', 'li', 'blockquote', 'a', 'hr', 'br', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'del']);
const ATTRIBUTES = { a: ['href', 'title'], ol: ['start'], th: ['align'], td: ['align'] };
const SAFE_URL = /^(https?:|mailto:|#)/i;

const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const parser = new Marked({ gfm: true, breaks: false });
parser.use({ renderer: { html: ({ text }) => escapeHtml(text) } }); // raw HTML shown, not run

/** Copy `node`'s allowed content into `target` (elements rebuilt, everything else as text). */
function copyAllowed(node, target) {
  for (const child of node.childNodes) {
    if (child.nodeType === Node.TEXT_NODE) { target.append(child.textContent); continue; }
    if (child.nodeType !== Node.ELEMENT_NODE) continue;
    const tag = child.tagName.toLowerCase();
    if (!TAGS.has(tag)) { target.append(child.textContent); continue; }
    const copy = document.createElement(tag);
    for (const name of ATTRIBUTES[tag] ?? []) {
      const value = child.getAttribute(name);
      if (value === null || (name === 'href' && !SAFE_URL.test(value.trim()))) continue;
      copy.setAttribute(name, value);
    }
    if (tag === 'a') copy.setAttribute('rel', 'noopener noreferrer');
    copyAllowed(child, copy);
    target.append(copy);
  }
}

/** Markdown text -> a fragment of safe elements. */
export function renderMarkdown(text) {
  const html = parser.parse(text, { async: false });
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, 'text/html');
  const fragment = document.createDocumentFragment();
  copyAllowed(doc.body, fragment);
  return fragment;
}
