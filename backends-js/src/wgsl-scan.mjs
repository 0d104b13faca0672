// A small WGSL binding scanner: what a student's module declares at module scope
// (resource variables with their @group/@binding, structs, entry points), read WITHOUT a
// compiler so the validator can check the binding convention before any device work.
// Twin: pylib/gpulab/wgsl_scan.py; pylib/tests/test_wgsl_twins.py runs both on a corpus of
// sources and compares the results field by field. It is not a parser: it reads declarations
// the convention asks for (docs/playground.md) and leaves everything else to the compiler.

// WGSL blankspace (the spec's list), spelled the same in both scanners: JS and Python disagree
// on what \s means outside ASCII.
const WS = '[\\t\\n\\v\\f\\r \\u0085\\u200e\\u200f\\u2028\\u2029]';
const ID = '[A-Za-z_][A-Za-z0-9_]*';
// WGSL's line breaks: each ends a `//` comment (the loop-budget rewriter reads the same stripped
// text, so a comment ended by a vertical tab cannot hide a loop from it)
const LINE_BREAKS = '\n\v\f\r\u0085\u2028\u2029';
const ATTR = `@${WS}*${ID}(?:${WS}*\\([^()]*\\))?${WS}*`;
// Each run of attributes is found once (matchAll is linear over them); what follows a run is
// then matched at its end (sticky), and a declaration's type is read up to the next stop
// (`;` `=` `@` `{` `}`: a type holds none of them) found by a binary search over their offsets
// (stopsOf): no pattern here rescans the rest of the source (`:([^;=]*);` at every
// `@group(0) var a:` made 128 KB take 0.93 s, 1 MiB minutes). The stop `@` also keeps
// declarations' types apart: n heads before one `;` each read only up to the next head.
const ATTR_RUN = new RegExp(`(?:${ATTR})+`, 'g');
const VAR_HEAD = new RegExp(`var${WS}*(?:<([^<>]*)>)?${WS}*(${ID})${WS}*:`, 'y');
const FN_TAIL = new RegExp(`fn${WS}+(${ID})`, 'y');
const STRUCT_DECL = new RegExp(`struct${WS}+(${ID})${WS}*\\{([^{}]*)\\}`, 'g');
const ATTR_ONE = new RegExp(`@${WS}*(${ID})(?:${WS}*\\(([^()]*)\\))?`, 'g');
const BLANK = new RegExp(WS, 'g');

/**
 * @typedef {{group: number|null, binding: number|null, space: string, access: string,
 *   name: string, type: string, line: number, column: number}} ScannedVar
 * @typedef {{name: string, members: {name: string, type: string}[], line: number}} ScannedStruct
 * @typedef {{vars: ScannedVar[], structs: ScannedStruct[], computeEntries: string[]}} Scan
 */

/**
 * The source with every comment replaced by spaces (newlines kept), so offsets and line
 * numbers stay those of the original. Block comments nest in WGSL.
 * @param {string} source
 */
export function stripComments(source) {
  const out = [];
  let depth = 0;
  let line = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    const next = source[i + 1];
    if (line) {
      if (LINE_BREAKS.includes(c)) { line = false; out.push(c); } else out.push(' ');
    } else if (depth > 0) {
      if (c === '*' && next === '/') { depth--; out.push('  '); i++; }
      else if (c === '/' && next === '*') { depth++; out.push('  '); i++; }
      else out.push(c === '\n' || c === '\r' ? c : ' ');
    } else if (c === '/' && next === '/') { line = true; out.push('  '); i++; }
    else if (c === '/' && next === '*') { depth = 1; out.push('  '); i++; }
    else out.push(c);
  }
  return out.join('');
}

/**
 * 1-based line and column of offsets in one text (line starts found once, then a binary search
 * per offset); the column in UTF-16 units, as the page's compiler counts (wgsl_scan.py's
 * line_index counts the same). @param {string} text
 */
export function lineIndex(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  /** @param {number} offset */
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid; else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - starts[lo] + 1 };
  };
}

/**
 * The first stop (`;` `=` `@` `{` `}`) at or after an offset (code.length when none): every
 * stop's offset is found once, then each question is a binary search. @param {string} code
 */
function stopsOf(code) {
  const offsets = [];
  for (let i = 0; i < code.length; i++) if (';=@{}'.includes(code[i])) offsets.push(i);
  return (/** @type {number} */ pos) => {
    let lo = 0;
    let hi = offsets.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (offsets[mid] < pos) lo = mid + 1; else hi = mid;
    }
    return lo < offsets.length ? offsets[lo] : code.length;
  };
}

/** Blankspace removed (types are compared as written without spaces). @param {string} s */
const squeeze = (s) => s.replace(BLANK, '');

/** @param {string} attrs the attribute run before a declaration */
function attributes(attrs) {
  /** @type {Map<string, string>} */
  const out = new Map();
  for (const m of attrs.matchAll(ATTR_ONE)) out.set(m[1], squeeze(m[2] ?? ''));
  return out;
}

/** A decimal attribute argument (`0`, `1u`, `2i`), or null. @param {string|undefined} arg */
function attrInt(arg) {
  const m = /^([0-9]+)[iu]?$/.exec(arg ?? '');
  return m ? Number(m[1]) : null;
}

/**
 * Split a struct body at top-level commas (a member type may hold `<a, b>`).
 * @param {string} body
 */
function splitMembers(body) {
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '<') depth++;
    else if (body[i] === '>') depth--;
    else if (body[i] === ',' && depth === 0) { parts.push(body.slice(start, i)); start = i + 1; }
  }
  parts.push(body.slice(start));
  return parts;
}

/** @param {string} body @returns {{name: string, type: string}[]} */
function structMembers(body) {
  const member = new RegExp(`^${WS}*(?:${ATTR})*(${ID})${WS}*:([\\s\\S]*)$`);
  const members = [];
  for (const part of splitMembers(body)) {
    if (squeeze(part) === '') continue;
    const m = member.exec(part);
    members.push(m ? { name: m[1], type: squeeze(m[2]) } : { name: '', type: squeeze(part) });
  }
  return members;
}

/**
 * The module-scope declarations the binding convention reads.
 * @param {string} source @returns {Scan}
 */
export function scanWgsl(source) {
  const code = stripComments(source);
  const at = lineIndex(code);
  /** @type {ScannedVar[]} */
  const vars = [];
  const computeEntries = [];
  const stopAfter = stopsOf(code);
  for (const run of code.matchAll(ATTR_RUN)) {
    const end = /** @type {number} */ (run.index) + run[0].length;
    const attrs = attributes(run[0]);
    VAR_HEAD.lastIndex = end;
    const v = VAR_HEAD.exec(code);
    const stop = v ? stopAfter(VAR_HEAD.lastIndex) : -1;
    if (v && code[stop] === ';') {
      const [space = '', access = ''] = squeeze(v[1] ?? '').split(',');
      const where = at(/** @type {number} */ (run.index));
      vars.push({
        group: attrs.has('group') ? attrInt(attrs.get('group')) : null,
        binding: attrs.has('binding') ? attrInt(attrs.get('binding')) : null,
        space, access, name: v[2], type: squeeze(code.slice(VAR_HEAD.lastIndex, stop)),
        line: where.line, column: where.column,
      });
      continue;
    }
    FN_TAIL.lastIndex = end;
    const f = FN_TAIL.exec(code);
    if (f && attrs.has('compute')) computeEntries.push(f[1]);
  }
  /** @type {ScannedStruct[]} */
  const structs = [];
  for (const m of code.matchAll(STRUCT_DECL)) {
    structs.push({ name: m[1], members: structMembers(m[2]), line: at(/** @type {number} */ (m.index)).line });
  }
  return { vars, structs, computeEntries };
}
