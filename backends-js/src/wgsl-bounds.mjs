// Bounds a student's WGSL source keeps before any compiler sees it. Twin:
// pylib/gpulab/wgsl_bounds.py (the module docstring there says what each bound is and why:
// naga crashed its process on 5000 nested parentheses, calls or array types, a 20,000-term
// sum, 20,000 else-if arms or a 20,000-long swizzle chain; lavapipe on a big function or
// private array). pylib/tests/test_wgsl_bounds.py compares both twins on a corpus and on
// hypothesis' hostile sources: the same refusal (code, offset, words) or none.
//
// One pass over the tokens (linear, no recursion on the source's nesting) checks nesting,
// chains, type templates and reserved names and collects the declarations; then the element
// counts and the private / workgroup / function byte totals, then the kernel's work.
import { LIMITS } from './optable.mjs';
import { stripComments } from './wgsl-scan.mjs';

const BLANK = '\\t\\n\\v\\f\\r \\u0085\\u200e\\u200f\\u2028\\u2029';
const OTHER = '[^\\x00-\\x7f\\u0085\\u200e\\u200f\\u2028\\u2029]';
const NUM_TAIL = '(?:[eEpP][+-]|[0-9A-Za-z_.])*';
const TOKEN = new RegExp(`[${BLANK}]+|((?:[A-Za-z_]|${OTHER})(?:[A-Za-z0-9_]|${OTHER})*)` +
  `|([0-9]${NUM_TAIL}|\\.[0-9]${NUM_TAIL})|([\\s\\S])`, 'g');
const ID = 1;
const NUM = 2;
const OP = 3;
const OPERATORS = '+-*/%&|^!~=<>.[';
const GENERATORS = new Set(['array', 'atomic', 'ptr', 'bitcast', 'binding_array', 'var',
  'vec2', 'vec3', 'vec4', ...['2', '3', '4'].flatMap((c) => ['2', '3', '4'].map((r) => `mat${c}x${r}`))]);
const DECLARATIONS = new Set(['const', 'override', 'alias', 'struct', 'var', 'fn']);
const LOOPS = new Set(['loop', 'for', 'while']);
const RESERVED = '_gpulab_';
/** named types (alias, struct) and consts referring to others, at most this deep */
const NAMED_DEPTH = 8;
/** byte sizes saturate here (both twins count exactly below it) */
const SATURATE = 2 ** 40;
/** const values from it on are not evaluated (numbers are exact below) */
const EXACT = 2 ** 53;
/** WebGPU's maxComputeInvocationsPerWorkgroup, which both lanes keep */
const INVOCATIONS_PER_GROUP = 256;

/** A bound the source passes: code (LIMIT or VALIDATION), the offending offset, detail. */
export class Refusal extends Error {
  /** @param {string} code @param {number} offset @param {string} detail */
  constructor(code, offset, detail) {
    super(detail);
    this.code = code;
    this.offset = offset;
    this.detail = detail;
  }
}

/** A constant expression the checker cannot evaluate. */
class Unknown extends Error {}

/** @param {string} name */
const lim = (name) => Number(LIMITS[/** @type {keyof typeof LIMITS} */ (name)]);

/** The source's tokens as three arrays: kind, start, end. */
class Tokens {
  /** @param {string} code */
  constructor(code) {
    this.code = code;
    /** @type {number[]} */ this.kind = [];
    /** @type {number[]} */ this.start = [];
    /** @type {number[]} */ this.end = [];
    for (const m of code.matchAll(TOKEN)) {
      const kind = m[1] !== undefined ? ID : m[2] !== undefined ? NUM : m[3] !== undefined ? OP : 0;
      if (!kind) continue; // blankspace
      this.kind.push(kind);
      this.start.push(/** @type {number} */ (m.index));
      this.end.push(/** @type {number} */ (m.index) + m[0].length);
    }
  }

  get length() { return this.kind.length; }

  /** @param {number} i */
  text(i) { return i >= 0 && i < this.kind.length ? this.code.slice(this.start[i], this.end[i]) : ''; }

  /** @param {number} i @param {string} chars */
  isOp(i, chars) {
    return i >= 0 && i < this.kind.length && this.kind[i] === OP && chars.includes(this.code[this.start[i]]);
  }

  /** @param {number} i @param {string} [name] */
  isId(i, name) {
    return i >= 0 && i < this.kind.length && this.kind[i] === ID && (name === undefined || this.text(i) === name);
  }

  /** @param {number} i */
  offset(i) { return i < this.kind.length ? this.start[i] : this.code.length; }
}

/**
 * @typedef {{keyword: string, first: number, last: number}} Declaration
 * @typedef {{declarations: Declaration[], consts: Declaration[],
 *   mainSizes: [number, number] | null, mainAt: number, loops: boolean}} Module
 */

/** Nesting, chains, type templates and reserved names, token by token; declarations collected. */
class Pass {
  /** @param {Tokens} toks */
  constructor(toks) {
    this.t = toks;
    this.maxExpr = lim('max_wgsl_expression_depth');
    this.maxBlock = lim('max_wgsl_block_depth');
    this.maxType = lim('max_wgsl_type_depth');
    this.maxOps = lim('max_wgsl_expression_operators');
    /** @type {Array<[string, number]>} open ( [ < with the enclosing chain count */
    this.levels = [];
    this.current = 0;
    this.total = 0;
    this.parens = 0;
    this.templates = 0;
    this.brace = 0;
    this.chain = new Array(this.maxBlock + 2).fill(0);
    this.chainTotal = 0;
    this.afterClose = false;
    /** @type {Module} */
    this.module = { declarations: [], consts: [], mainSizes: null, mainAt: 0, loops: false };
    /** @type {Declaration | null} */ this.open = null;
    /** @type {Declaration | null} */ this.constOpen = null;
    /** @type {[number, number] | null} */ this.pendingSizes = null;
    this.sizesOpen = -1;
  }

  run() {
    const t = this.t;
    for (let i = 0; i < t.length; i++) this.token(i, t.kind[i], t.kind[i] === OP ? t.code[t.start[i]] : '');
    return this.module;
  }

  /** @param {number} i @param {string} detail @param {string} [code] */
  refuse(i, detail, code = 'LIMIT') { return new Refusal(code, this.t.offset(i), detail); }

  /** @param {number} i @param {number} kind @param {string} op */
  token(i, kind, op) {
    if (this.afterClose) {
      this.afterClose = false;
      if (!this.t.isId(i, 'else')) {
        this.chainTotal -= this.chain[this.brace];
        this.chain[this.brace] = 0;
      }
    }
    if (kind === ID) this.identifier(i);
    else if (kind === OP) this.operator(i, op);
  }

  /** @param {number} i */
  identifier(i) {
    const t = this.t;
    const name = t.text(i);
    if (name.startsWith(RESERVED)) {
      throw this.refuse(i, `identifiers starting with ${RESERVED} are reserved for the loop budget: ${name}`,
        'VALIDATION');
    }
    if (name === 'else' && t.isId(i + 1, 'if')) {
      this.chain[this.brace] += 1;
      this.chainTotal += 1;
    }
    if ((name === 'const' || name === 'override') && this.parens === 0 && this.constOpen === null) {
      this.constOpen = { keyword: name, first: i, last: -1 };
      this.module.consts.push(this.constOpen);
    }
    if (LOOPS.has(name) && this.open !== null && this.open.keyword === 'fn' && this.brace) {
      this.module.loops = true;
    }
    if (this.brace === 0 && this.parens === 0 && this.open === null && DECLARATIONS.has(name)) {
      this.open = { keyword: name, first: i, last: -1 };
      this.module.declarations.push(this.open);
      if (name === 'fn' && t.isId(i + 1, 'main') && this.module.mainSizes === null) {
        this.module.mainSizes = this.pendingSizes ?? [0, 0];
        this.module.mainAt = i;
      }
    }
    const atBrace0 = this.brace === 0 && t.isOp(i - 1, '@') && t.isOp(i + 1, '(');
    if (name === 'workgroup_size' && atBrace0) this.sizesOpen = i + 2;
  }

  /** @param {number} i @param {string} c */
  operator(i, c) {
    if (c === '(' || c === '[') {
      if (c === '[') this.count(i);
      this.push(c);
      if (this.parens > this.maxExpr) {
        throw this.refuse(i, 'parentheses and brackets (grouping, calls, indexing) nest more than ' +
          `${this.maxExpr} deep (max_wgsl_expression_depth)`);
      }
    } else if (c === '<' && this.t.isId(i - 1) && GENERATORS.has(this.t.text(i - 1))) {
      this.push('<');
      if (this.templates > this.maxType) {
        throw this.refuse(i, `type templates nest more than ${this.maxType} deep (max_wgsl_type_depth)`);
      }
    } else if (c === ')' || c === ']') {
      while (this.levels.length && this.levels[this.levels.length - 1][0] === '<') this.pop();
      if (this.levels.length) this.pop();
      if (c === ')' && this.parens === 0 && this.sizesOpen >= 0) {
        this.pendingSizes = [this.sizesOpen, i];
        this.sizesOpen = -1;
      }
    } else if (c === '>' && this.levels.length && this.levels[this.levels.length - 1][0] === '<') {
      this.pop();
    } else if (c === ',') {
      this.total -= this.current;
      this.current = 0;
    } else if (c === ';' || c === '{' || c === '}') {
      this.statementEnd(i, c);
    } else if (OPERATORS.includes(c)) {
      this.count(i);
    }
  }

  /** @param {number} i */
  count(i) {
    this.current += 1;
    this.total += 1;
    if (this.total > this.maxOps) {
      throw this.refuse(i, `an expression chains more than ${this.maxOps} operators ` +
        '(max_wgsl_expression_operators): split it with let');
    }
  }

  /** @param {string} kind */
  push(kind) {
    this.levels.push([kind, this.current]);
    this.current = 0;
    if (kind === '<') this.templates += 1; else this.parens += 1;
  }

  pop() {
    const [kind, outer] = /** @type {[string, number]} */ (this.levels.pop());
    this.total -= this.current;
    this.current = outer;
    if (kind === '<') this.templates -= 1; else this.parens -= 1;
  }

  /** @param {number} i @param {string} c */
  statementEnd(i, c) {
    if (this.constOpen !== null) {
      this.constOpen.last = i;
      this.constOpen = null;
    }
    this.levels = [];
    this.current = this.total = this.parens = this.templates = 0;
    if (c === '{') {
      this.brace += 1;
      if (this.brace + this.chainTotal > this.maxBlock) {
        throw this.refuse(i, `blocks nest more than ${this.maxBlock} deep, each else-if arm counting ` +
          'one (max_wgsl_block_depth)');
      }
    } else if (c === '}' && this.brace > 0) {
      this.chainTotal -= this.chain[this.brace];
      this.chain[this.brace] = 0;
      this.brace -= 1;
      this.afterClose = true;
      if (this.brace === 0 && this.open !== null && (this.open.keyword === 'fn' || this.open.keyword === 'struct')) {
        this.close(i);
      }
    }
    if (this.brace === 0 && c === ';' && this.open !== null) this.close(i);
  }

  /** @param {number} i */
  close(i) {
    /** @type {Declaration} */ (this.open).last = i;
    this.open = null;
    this.pendingSizes = null;
    this.sizesOpen = -1;
  }
}

// ---------------------------------------------------------------- constants and sizes

/** @param {string} text */
function intLiteral(text) {
  const m = /^(0[xX][0-9a-fA-F]+|[0-9]+)[iu]?$/.exec(text);
  if (!m) return null;
  const v = /^0[xX]/.test(m[1]) ? parseInt(m[1].slice(2), 16) : parseInt(m[1], 10);
  return v;
}

/** @param {number} v */
function exact(v) {
  if (!(Math.abs(v) < EXACT)) throw new Unknown();
  return v;
}

/** @param {number} a @param {number} b */
function truncDiv(a, b) {
  if (b === 0) throw new Unknown();
  return Number(BigInt(a) / BigInt(b)); // exact, toward zero (a float quotient may round up)
}

/** @param {string} op @param {number} a @param {number} b */
function apply(op, a, b) {
  switch (op) {
    case '+': return exact(a + b);
    case '-': return exact(a - b);
    case '*': return exact(a * b);
    case '/': return truncDiv(a, b);
    case '%': return a - b * truncDiv(a, b);
    case '<<': case '>>':
      if (!(b >= 0 && b <= 31)) throw new Unknown();
      return op === '<<' ? exact(a * 2 ** b) : Math.floor(a / 2 ** b);
    default: throw new Unknown();
  }
}

/** @type {Record<string, number>} */
const PRECEDENCE = { '<<': 1, '>>': 1, '+': 2, '-': 2, '*': 3, '/': 3, '%': 3 };

/** @param {number} n @param {number} a */
const roundUp = (n, a) => Math.ceil(n / a) * a;

/** Byte sizes of types and values of constants, from the collected declarations. */
class Sizes {
  /** @param {Tokens} toks @param {Module} module */
  constructor(toks, module) {
    this.t = toks;
    /** @type {Map<string, [number, number]>} */ this.consts = new Map();
    /** @type {Map<string, number>} */ this.aliases = new Map();
    /** @type {Map<string, [number, number]>} */ this.structs = new Map();
    /** @type {Map<string, number|null>} */ this.values = new Map();
    /** @type {Map<string, [number, number]|null>} */ this.named = new Map();
    this.maxElements = lim('max_wgsl_array_elements');
    // consts of every scope by name; a name declared twice (a function's const shadowing a
    // module's) is ambiguous to a checker without scopes: unknown
    const ambiguous = new Set();
    for (const d of module.consts) {
      const nameAt = d.first + 1;
      const end = d.last >= 0 ? d.last : toks.length;
      const eq = this.find(nameAt, end, '=');
      if (!toks.isId(nameAt) || eq < 0) continue;
      const name = toks.text(nameAt);
      if (this.consts.has(name)) ambiguous.add(name);
      this.consts.set(name, [eq + 1, end]);
    }
    for (const name of ambiguous) this.consts.delete(name);
    for (const d of module.declarations) {
      const nameAt = d.first + 1;
      if (!toks.isId(nameAt)) continue;
      const name = toks.text(nameAt);
      const end = d.last >= 0 ? d.last : toks.length;
      if (d.keyword === 'alias' && toks.isOp(nameAt + 1, '=')) {
        if (!this.aliases.has(name)) this.aliases.set(name, nameAt + 2);
      } else if (d.keyword === 'struct' && toks.isOp(nameAt + 1, '{')) {
        if (!this.structs.has(name)) this.structs.set(name, [nameAt + 2, end]);
      }
    }
  }

  /** The first operator `char` in tokens [i, end), or -1. @param {number} i @param {number} end @param {string} char */
  find(i, end, char) {
    for (let j = i; j < end; j++) if (this.t.isOp(j, char)) return j;
    return -1;
  }

  /**
   * The integer value of tokens [first, last) (shunting-yard: no recursion on parentheses),
   * or Unknown. @param {number} first @param {number} last @param {number} [depth]
   */
  value(first, last, depth = 0) {
    const t = this.t;
    /** @type {number[]} */ const out = [];
    /** @type {string[]} */ const ops = [];
    let expectOperand = true;
    for (let i = first; i < last; i++) {
      const kind = t.kind[i];
      const text = t.text(i);
      if (kind === NUM && expectOperand) {
        const v = intLiteral(text);
        if (v === null) throw new Unknown();
        out.push(exact(v));
        expectOperand = false;
      } else if (kind === ID && expectOperand && (text === 'i32' || text === 'u32') && t.isOp(i + 1, '(')) {
        // a conversion of an integer: the value itself
      } else if (kind === ID && expectOperand && !t.isOp(i + 1, '(')) {
        out.push(this.namedValue(text, depth));
        expectOperand = false;
      } else if (t.isOp(i, '(') && expectOperand) {
        ops.push('(');
      } else if (t.isOp(i, ')') && !expectOperand) {
        while (ops.length && ops[ops.length - 1] !== '(') Sizes.reduce(out, /** @type {string} */ (ops.pop()));
        if (!ops.length) throw new Unknown();
        ops.pop();
      } else if (t.isOp(i, '-') && expectOperand) {
        ops.push('neg');
      } else if (kind === OP && !expectOperand) {
        let op = text;
        if ((text === '<' || text === '>') && t.isOp(i + 1, text)) { op = text + text; i += 1; }
        if (!(op in PRECEDENCE)) throw new Unknown();
        while (ops.length && ops[ops.length - 1] !== '(' &&
          (ops[ops.length - 1] === 'neg' || PRECEDENCE[ops[ops.length - 1]] >= PRECEDENCE[op])) {
          Sizes.reduce(out, /** @type {string} */ (ops.pop()));
        }
        ops.push(op);
        expectOperand = true;
      } else {
        throw new Unknown();
      }
    }
    if (expectOperand) throw new Unknown();
    while (ops.length) {
      const op = /** @type {string} */ (ops.pop());
      if (op === '(') throw new Unknown();
      Sizes.reduce(out, op);
    }
    if (out.length !== 1) throw new Unknown();
    return out[0];
  }

  /** @param {number[]} out @param {string} op */
  static reduce(out, op) {
    if (op === 'neg') {
      if (!out.length) throw new Unknown();
      out.push(-/** @type {number} */ (out.pop()));
      return;
    }
    if (out.length < 2) throw new Unknown();
    const b = /** @type {number} */ (out.pop());
    const a = /** @type {number} */ (out.pop());
    out.push(apply(op, a, b));
  }

  /** @param {string} name @param {number} depth */
  namedValue(name, depth) {
    if (this.values.has(name)) {
      const found = this.values.get(name);
      if (found === null || found === undefined) throw new Unknown();
      return found;
    }
    const where = this.consts.get(name);
    if (where === undefined || depth >= NAMED_DEPTH) throw new Unknown();
    this.values.set(name, null); // a cycle evaluates to unknown
    const found = this.value(where[0], where[1], depth + 1);
    this.values.set(name, found);
    return found;
  }

  /**
   * [size, align, the token after the type] of the type written at token i.
   * @param {number} i @param {number} [depth] @returns {[number, number, number]}
   */
  typeAt(i, depth = 0) {
    const t = this.t;
    const name = t.text(i);
    const templated = t.isOp(i + 1, '<');
    if (name === 'array' && templated) return this.array(i, depth);
    if (name === 'f32' || name === 'i32' || name === 'u32' || name === 'bool') return [4, 4, i + 1];
    if (name === 'f16') return [2, 2, i + 1];
    const m = /^(?:vec([234])([fiuh]?)|mat([234])x([234])([fh]?))$/.exec(name);
    if (m) return this.vectorOrMatrix(i, m, templated, depth);
    if (name === 'atomic' && templated) return [4, 4, this.templateEnd(i + 1)];
    if (t.isId(i) && (this.aliases.has(name) || this.structs.has(name))) {
      const [size, align] = this.namedType(i, name, depth);
      return [size, align, i + 1];
    }
    return [0, 1, templated ? this.templateEnd(i + 1) : i + 1]; // the compiler's
  }

  /** @param {number} i @param {number} depth @returns {[number, number, number]} */
  array(i, depth) {
    const t = this.t;
    const [size, align, j] = this.typeAt(i + 2, depth);
    if (!t.isOp(j, ',')) return [0, align, this.templateEnd(i + 1)]; // runtime-sized
    const end = this.templateEnd(i + 1);
    let last = end - 1;
    if (t.isOp(last - 1, ',')) last -= 1; // a trailing comma
    let count;
    try {
      count = this.value(j + 1, last);
    } catch (err) {
      if (!(err instanceof Unknown)) throw err;
      throw new Refusal('VALIDATION', t.offset(j + 1), `the array count \`${t.code.slice(t.offset(j + 1),
        t.offset(last)).trim()}\` is not an integer constant of literals and const or override values: ` +
        'the size of a private, workgroup or function array must be known before compiling');
    }
    if (count > this.maxElements) {
      throw new Refusal('LIMIT', t.offset(i), `an array of ${count} elements is more than ` +
        `max_wgsl_array_elements ${this.maxElements}`);
    }
    const stride = roundUp(size, align);
    return [Math.min(Math.max(count, 0) * stride, SATURATE), align, end];
  }

  /**
   * @param {number} i @param {RegExpExecArray} m @param {boolean} templated @param {number} depth
   * @returns {[number, number, number]}
   */
  vectorOrMatrix(i, m, templated, depth) {
    const suffix = m[1] ? m[2] : m[5];
    let after = i + 1;
    let scalar = suffix === 'h' ? 2 : 4;
    if (templated && !suffix) {
      scalar = this.typeAt(i + 2, depth)[0];
      after = this.templateEnd(i + 1);
    }
    const rows = Number(m[1] || m[4]);
    const align = scalar * (rows === 2 ? 2 : 4);
    const size = scalar * rows;
    if (m[1]) return [size, align, after];
    return [Number(m[3]) * roundUp(size, align), align, after];
  }

  /** The token after the `>` closing the template list opened at token i. @param {number} i */
  templateEnd(i) {
    const t = this.t;
    let depth = 0;
    let j = i;
    for (; j < t.length; j++) {
      if (t.isOp(j, '<') && (j === i || (t.isId(j - 1) && GENERATORS.has(t.text(j - 1))))) depth += 1;
      else if (t.isOp(j, '>')) {
        depth -= 1;
        if (depth === 0) return j + 1;
      } else if (t.isOp(j, ';{}')) return j;
    }
    return j;
  }

  /** @param {number} i @param {string} name @param {number} depth @returns {[number, number]} */
  namedType(i, name, depth) {
    if (this.named.has(name)) return this.named.get(name) ?? [0, 1];
    if (depth >= NAMED_DEPTH) {
      throw new Refusal('LIMIT', this.t.offset(i), `type ${name} refers through more than ${NAMED_DEPTH} named types`);
    }
    this.named.set(name, null); // a cycle is the compiler's to refuse
    /** @type {[number, number]} */
    let found;
    if (this.aliases.has(name)) {
      const [size, align] = this.typeAt(/** @type {number} */ (this.aliases.get(name)), depth + 1);
      found = [size, align];
    } else {
      const [first, last] = /** @type {[number, number]} */ (this.structs.get(name));
      found = this.struct(first, last, depth + 1);
    }
    this.named.set(name, found);
    return found;
  }

  /**
   * WGSL's layout: each member at its alignment (@align), of its size (@size).
   * @param {number} first @param {number} last @param {number} depth @returns {[number, number]}
   */
  struct(first, last, depth) {
    const t = this.t;
    let offset = 0;
    let structAlign = 1;
    let i = first;
    while (i < last) {
      /** @type {number|null} */ let sizeAttr = null;
      /** @type {number|null} */ let alignAttr = null;
      while (t.isOp(i, '@') && t.isId(i + 1)) {
        const attr = t.text(i + 1);
        i += 2;
        if (t.isOp(i, '(')) {
          const close = this.closeParen(i, last);
          if (attr === 'size' || attr === 'align') {
            let value = null;
            try { value = this.value(i + 1, close); } catch (err) {
              if (!(err instanceof Unknown)) throw err;
            }
            if (attr === 'size') sizeAttr = value; else alignAttr = value;
          }
          i = close + 1;
        }
      }
      if (!(t.isId(i) && t.isOp(i + 1, ':'))) {
        i = this.nextMember(i, last);
        continue;
      }
      let [size, align, after] = this.typeAt(i + 2, depth);
      align = Math.max(1, Math.min(alignAttr || align, SATURATE));
      size = Math.min(Math.max(sizeAttr !== null ? sizeAttr : size, 0), SATURATE);
      offset = Math.min(roundUp(offset, align) + size, SATURATE);
      structAlign = Math.max(structAlign, align);
      i = this.nextMember(after, last);
    }
    return [Math.min(roundUp(offset, structAlign), SATURATE), structAlign];
  }

  /** @param {number} i @param {number} last */
  closeParen(i, last) {
    let depth = 0;
    for (let j = i; j < last; j++) {
      if (this.t.isOp(j, '(')) depth += 1;
      else if (this.t.isOp(j, ')')) {
        depth -= 1;
        if (depth === 0) return j;
      }
    }
    return last;
  }

  /** The token after the `,` ending the member at i, or last. @param {number} i @param {number} last */
  nextMember(i, last) {
    const t = this.t;
    let depth = 0;
    for (; i < last; i++) {
      if (t.isOp(i, '(') || (t.isOp(i, '<') && t.isId(i - 1))) depth += 1;
      else if (t.isOp(i, ')>')) depth = Math.max(0, depth - 1);
      else if (t.isOp(i, ',') && depth === 0) return i + 1;
    }
    return last;
  }
}

// ---------------------------------------------------------------- the checks

/** @param {number} n */
const bytes = (n) => (n < SATURATE ? String(n) : `more than ${SATURATE}`);

/** Tokens in [first, last) where an array or a named structure type is written. */
function sizedPositions(/** @type {Tokens} */ t, /** @type {number} */ first, /** @type {number} */ last,
  /** @type {Sizes} */ sizes) {
  const out = [];
  for (let i = first; i < last; i++) {
    if (t.kind[i] !== ID) continue;
    const name = t.text(i);
    if ((name === 'array' && t.isOp(i + 1, '<')) || sizes.structs.has(name) || sizes.aliases.has(name)) {
      out.push(i);
    }
  }
  return out;
}

/**
 * The token where a module-scope var's type is written: after its `:`, else the initializer's
 * constructor after `=` (-1: neither). @param {Tokens} t @param {number} first @param {number} last
 */
function varType(t, first, last) {
  for (let j = first + 1; j < last; j++) {
    if (t.isOp(j, ':')) return j + 1;
    if (t.isOp(j, '=')) return t.isId(j + 1) ? j + 1 : -1;
  }
  return -1;
}

/** Element counts and the private, workgroup and function totals, in source order. */
function memory(/** @type {Tokens} */ t, /** @type {Module} */ module, /** @type {Sizes} */ sizes) {
  /** @type {Record<string, number>} */
  const totals = { private: 0, workgroup: 0 };
  /** @type {Record<string, [string, number]>} */
  const limits = {
    private: ['max_wgsl_private_bytes', lim('max_wgsl_private_bytes')],
    workgroup: ['max_wgsl_workgroup_bytes', lim('max_wgsl_workgroup_bytes')],
  };
  const fnMost = lim('max_wgsl_function_bytes');
  for (const d of module.declarations) {
    const last = d.last >= 0 ? d.last : t.length;
    if (d.keyword === 'var') {
      const space = t.isOp(d.first + 1, '<') ? t.text(d.first + 2) : 'private';
      if (!(space in totals)) continue;
      const at = varType(t, d.first, last);
      if (at < 0) continue;
      const [size] = sizes.typeAt(at);
      totals[space] = Math.min(totals[space] + size, SATURATE);
      const [name, most] = limits[space];
      if (totals[space] > most) {
        throw new Refusal('LIMIT', t.offset(d.first), `var<${space}> variables take ` +
          `${bytes(totals[space])} bytes, more than ${name} ${most}`);
      }
    } else if (d.keyword === 'fn') {
      let total = 0;
      const label = t.text(d.first + 1) || '?';
      let skipTo = -1;
      for (const i of sizedPositions(t, d.first, last, sizes)) {
        if (i < skipTo) continue; // inside a type already counted
        const [size, , after] = sizes.typeAt(i);
        skipTo = after;
        total = Math.min(total + size, SATURATE);
        if (total > fnMost) {
          throw new Refusal('LIMIT', t.offset(i), `function ${label} holds ${bytes(total)} bytes of ` +
            `arrays and structures, more than max_wgsl_function_bytes ${fnMost}`);
        }
      }
    }
  }
}

/**
 * Workgroups x workgroup size x (the loop budget when there is a loop) within max_kernel_work;
 * a workgroup size the checker cannot evaluate counts as the device's most. Exact (BigInt).
 * @param {Tokens} t @param {Module} module @param {Sizes} sizes @param {number[]} workgroups
 */
function work(t, module, sizes, workgroups) {
  let perGroup = BigInt(INVOCATIONS_PER_GROUP);
  if (module.mainSizes && module.mainSizes[1] > module.mainSizes[0]) {
    const [first, last] = module.mainSizes;
    const parts = [];
    let start = first;
    let depth = 0;
    for (let j = first; j < last; j++) {
      if (t.isOp(j, '(')) depth += 1;
      else if (t.isOp(j, ')')) depth -= 1;
      else if (t.isOp(j, ',') && depth === 0) { parts.push([start, j]); start = j + 1; }
    }
    if (start < last) parts.push([start, last]);
    try {
      const values = parts.map(([a, b]) => sizes.value(a, b));
      if (values.length && values.every((v) => v >= 1)) {
        perGroup = values.reduce((p, v) => p * BigInt(v), 1n);
      }
    } catch (err) {
      if (!(err instanceof Unknown)) throw err;
    }
  }
  const budget = lim('max_loop_iterations');
  const loops = BigInt(module.loops ? budget : 1);
  const total = workgroups.reduce((p, w) => p * BigInt(w), 1n) * perGroup * loops;
  const most = LIMITS.max_kernel_work;
  if (total > BigInt(most)) {
    const loopText = module.loops ? ` x ${budget} loop iterations (the loop budget)` : '';
    throw new Refusal('LIMIT', t.offset(module.mainAt), `the kernel's work is ${workgroups.join(' x ')} ` +
      `workgroups x ${perGroup} invocations${loopText} = ${total}, more than max_kernel_work ${most}`);
  }
}

/**
 * The first bound the source passes (with its offset in the source), or null.
 * @param {string} source @param {number[]} workgroups
 * @returns {Refusal | null}
 */
export function checkBounds(source, workgroups) {
  const toks = new Tokens(stripComments(source));
  try {
    const module = new Pass(toks).run();
    const sizes = new Sizes(toks, module);
    memory(toks, module, sizes);
    work(toks, module, sizes, workgroups);
  } catch (err) {
    if (err instanceof Refusal) return err;
    throw err;
  }
  return null;
}

/**
 * (the message after the node label) for a refusal: line and column (UTF-16 units, as the
 * page's compiler counts) and the detail.
 * @param {string} source @param {Refusal} refusal
 */
export function refusalMessage(source, refusal) {
  const lineStart = source.lastIndexOf('\n', refusal.offset - 1) + 1;
  let line = 1;
  for (let i = 0; i < refusal.offset; i++) if (source[i] === '\n') line++;
  const column = refusal.offset - lineStart + 1;
  const kind = refusal.code === 'LIMIT' ? 'WGSL limit' : 'WGSL error';
  return { message: `${kind} at line ${line}, column ${column}: ${refusal.detail}`, line, column };
}
