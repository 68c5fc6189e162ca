import { numberFromToken } from './exact-number.js';
import { jsonDepth } from './json-depth.js';
import { isArrayIndexKey, keepKeyOrder } from './json-key-order.js';
import { setOwnKey, type JsonObject } from './json-merge.js';

// JSON read as Python's json.loads reads it, so that every value a source sends reaches the cache, templates, hooks
// and signals as os-collect-config and os-apply-config would carry it: NaN, Infinity and -Infinity are values;
// integers keep every digit and floats stay floats (exact-number.ts); a repeated key keeps its first position and its
// last value; an object keeps its keys' order, integer-like keys included (json-key-order.ts); lone surrogates stay as
// they are. The reader keeps its own stack, so nesting depth costs no call stack.
//
// Why not lossless-json: it refuses NaN, Infinity and -Infinity (which Python reads and writes, and which the cache
// therefore holds after a source sends 1e400), throws on repeated keys by default, and recurses once per level.
//
// Text with no number that has a fraction or an exponent or 16 digits reads the same with the engine's JSON.parse,
// which is many times faster and is what an idle daemon's polls almost always meet; anything else takes the reader
// below.

/**
 * Text the engine's JSON.parse may read differently from Python: a number with a fraction or an exponent, or of 16
 * digits or more. A number stands where a value does: at the start, or after `:`, `[` or `,`, and before `,`, `]`, `}`
 * or the end. The same inside a string (`"x:1.5,"`) only sends the text to the reader, which reads it right. A test
 * that looked at digits anywhere sent nearly every Heat document there: its ids are hex (`...-5c1e-...`).
 * Also a key that begins with a digit or with an escaped one ("443": or "\u0034": ...), which may be integer-like:
 * JSON.parse would list it before the keys that came before it.
 */
const NEEDS_EXACT_READER =
  /(?:^|[:[,])\s*-?(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d{16,})\s*(?:[,\]}]|$)|"(?:\d|\\u003\d)[^"]*"\s*:/;

export interface PythonJsonParseOptions {
  /** Refuse values nested deeper than this (objects and arrays count one level each). */
  readonly maxDepth?: number;
}

/** A document that is not JSON as Python reads it, or is nested deeper than allowed. */
export class PythonJsonError extends SyntaxError {
  override name = 'PythonJsonError';
  constructor(
    message: string,
    /** True when the text is valid JSON refused only for its depth. */
    readonly tooDeep = false,
  ) {
    super(message);
  }
}

export function parsePythonJson(text: string, options: PythonJsonParseOptions = {}): unknown {
  const maxDepth = options.maxDepth ?? Infinity;
  if (!NEEDS_EXACT_READER.test(text)) {
    let value: unknown;
    let parsed = false;
    try {
      value = JSON.parse(text);
      parsed = true;
    } catch {
      // NaN, Infinity, or not JSON: the reader below decides, and says where.
    }
    if (parsed) {
      if (maxDepth !== Infinity && jsonDepth(value, maxDepth + 1) > maxDepth) throw tooDeep(maxDepth);
      return value;
    }
  }
  return new Reader(text, maxDepth).document();
}

function tooDeep(maxDepth: number): PythonJsonError {
  return new PythonJsonError(`JSON nested deeper than ${maxDepth} levels`, true);
}

interface Frame {
  readonly container: unknown[] | JsonObject;
  /** The key whose value is being read, in an object. */
  key: string | undefined;
  /** An object's keys in the order they came, from its first integer-like key on (JavaScript would list it first). */
  order?: string[];
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/y;
// eslint-disable-next-line no-control-regex -- a JSON string ends its plain run at a control character
const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;
const HEX4 = /[0-9a-fA-F]{4}/y;
const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};
const LITERALS: ReadonlyArray<readonly [string, unknown]> = [
  ['null', null],
  ['true', true],
  ['false', false],
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
];

/**
 * A key of an object and its value; a repeated key keeps its first position. The order the keys came in is noted from
 * the first integer-like key on (before it, JavaScript keeps insertion order).
 */
function setKey(frame: Frame, object: JsonObject, key: string, value: unknown): void {
  if (frame.order !== undefined) {
    if (!Object.hasOwn(object, key)) frame.order.push(key);
  } else if (isArrayIndexKey(key) && !Object.hasOwn(object, key)) {
    frame.order = [...Object.keys(object), key];
  }
  setOwnKey(object, key, value);
}

/** What valueOrOpen() returns after it opened a container: its items come next. */
const OPENED: unique symbol = Symbol('opened');

class Reader {
  private i = 0;

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
  ) {}

  document(): unknown {
    const stack: Frame[] = [];
    for (;;) {
      let value = this.valueOrOpen(stack);
      if (value === OPENED) continue;
      // Close every container this value completes, or move on to the next item of the innermost one.
      for (;;) {
        const top = stack.at(-1);
        if (top === undefined) {
          this.skipSpace();
          if (this.i < this.text.length) throw this.error('extra data');
          return value;
        }
        if (Array.isArray(top.container)) top.container.push(value);
        else setKey(top, top.container, top.key as string, value);
        this.skipSpace();
        const c = this.text[this.i];
        const close = Array.isArray(top.container) ? ']' : '}';
        if (c === ',') {
          this.i++;
          if (!Array.isArray(top.container)) top.key = this.key();
          break;
        }
        if (c !== close) throw this.error(`expecting ',' or '${close}'`);
        this.i++;
        stack.pop();
        if (top.order !== undefined) keepKeyOrder(top.container, top.order);
        value = top.container;
      }
    }
  }

  /** A scalar, an empty container, or OPENED after pushing a non-empty container on the stack. */
  private valueOrOpen(stack: Frame[]): unknown {
    this.skipSpace();
    const c = this.text[this.i];
    if (c !== '{' && c !== '[') return this.scalar();
    if (stack.length >= this.maxDepth) throw tooDeep(this.maxDepth);
    this.i++;
    this.skipSpace();
    if (this.text[this.i] === (c === '{' ? '}' : ']')) {
      this.i++;
      return c === '{' ? {} : [];
    }
    if (c === '[') stack.push({ container: [], key: undefined });
    else stack.push({ container: {}, key: this.key(true) });
    return OPENED;
  }

  /** An object key and its colon; `first` when it follows the opening brace (already past the space). */
  private key(first = false): string {
    if (!first) this.skipSpace();
    if (this.text[this.i] !== '"') throw this.error('expecting a property name in double quotes');
    const key = this.string();
    this.skipSpace();
    if (this.text[this.i] !== ':') throw this.error("expecting ':' delimiter");
    this.i++;
    return key;
  }

  private scalar(): unknown {
    const c = this.text[this.i];
    if (c === '"') return this.string();
    NUMBER.lastIndex = this.i;
    const number = NUMBER.exec(this.text);
    if (number !== null) {
      this.i = NUMBER.lastIndex;
      return numberFromToken(number[0]);
    }
    for (const [word, value] of LITERALS) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length;
        return value;
      }
    }
    throw this.error('expecting value');
  }

  private string(): string {
    let out = '';
    this.i++;
    for (;;) {
      PLAIN_RUN.lastIndex = this.i;
      PLAIN_RUN.exec(this.text);
      out += this.text.slice(this.i, PLAIN_RUN.lastIndex);
      this.i = PLAIN_RUN.lastIndex;
      const c = this.text[this.i];
      if (c === '"') {
        this.i++;
        return out;
      }
      if (c === undefined) throw this.error('unterminated string');
      if (c !== '\\') throw this.error('invalid control character');
      out += this.escape();
    }
  }

  private escape(): string {
    const c = this.text[this.i + 1];
    const simple = c === undefined ? undefined : ESCAPES[c];
    if (simple !== undefined) {
      this.i += 2;
      return simple;
    }
    HEX4.lastIndex = this.i + 2;
    if (c !== 'u' || HEX4.exec(this.text) === null) throw this.error('invalid escape');
    this.i += 6;
    return String.fromCharCode(parseInt(this.text.slice(this.i - 4, this.i), 16));
  }

  private skipSpace(): void {
    for (;;) {
      const c = this.text.charCodeAt(this.i);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
      this.i++;
    }
  }

  /** An error in Python's words and position (line, column, char), so operators compare it with upstream's. */
  private error(what: string): PythonJsonError {
    const before = this.text.slice(0, this.i);
    const line = before.split('\n').length;
    const column = this.i - before.lastIndexOf('\n');
    return new PythonJsonError(`not valid JSON: ${what}: line ${line} column ${column} (char ${this.i})`);
  }
}
