// The editor's syntax colours as CSS variables (style.css sets them for light and dark mode),
// so the highlighting follows prefers-color-scheme like the rest of the page. CodeMirror's
// defaultHighlightStyle has fixed light-theme colours (dark purple keywords, dark red strings),
// which are hard to read on the dark editor background. The light values are its colours.
import { HighlightStyle } from '@codemirror/language';
import { tags as t } from '@lezer/highlight';

const v = (name) => `var(--code-${name})`;

export const codeHighlight = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.definitionKeyword, t.moduleKeyword, t.operatorKeyword], color: v('keyword') },
  { tag: [t.atom, t.bool, t.null, t.self], color: v('atom') },
  { tag: [t.number], color: v('number') },
  { tag: [t.string, t.special(t.string)], color: v('string') },
  { tag: [t.regexp, t.escape], color: v('string') },
  { tag: [t.comment, t.lineComment, t.blockComment], color: v('comment'), fontStyle: 'italic' },
  { tag: [t.definition(t.variableName), t.function(t.definition(t.variableName))], color: v('def') },
  { tag: [t.typeName, t.className, t.definition(t.className)], color: v('type') },
  { tag: [t.propertyName, t.function(t.propertyName)], color: v('property') },
  { tag: t.invalid, color: v('invalid') },
  { tag: t.heading, fontWeight: 'bold' },
  { tag: t.emphasis, fontStyle: 'italic' },
  { tag: t.strong, fontWeight: 'bold' },
]);
