import { TemplateError } from './apply-errors.js';

// Mustache parser with the spec's whitespace rules (standalone section, comment, partial and delimiter tags drop
// their whole line), as pystache applies them. Unlike pystache, an unclosed tag, an unclosed or mismatched section
// and an empty tag are errors: upstream silently rendered them as text or closed the section at the end of the file.
//
// Written for a cold process: os-apply-config parses every template once and exits, so most of this code runs in
// V8's interpreter. The scan therefore does as few operations per tag as it can (character codes, no regular
// expression or substring per tag beyond the tag's name) and counts lines only when it reports an error.

export type Node =
  | { kind: 'text'; text: string }
  | { kind: 'var'; name: string; path: readonly string[] }
  | { kind: 'section'; name: string; path: readonly string[]; inverted: boolean; children: Node[] };

interface OpenSection {
  name: string;
  inverted: boolean;
  children: Node[];
  /** Offset of the opening tag (its line is worked out only for an error message). */
  at: number;
}

const LF = 10;
const CR = 13;
const SPACE = 32;
const TAB = 9;
const BRACE = 0x7b; // {
const EQUALS = 0x3d; // =

export function parseTemplate(source: string): Node[] {
  return new TemplateParser(source).parse();
}

/** One tag as found: its kind, where its name is, and where the text after it starts. */
interface Tag {
  readonly kind: number;
  readonly start: number;
  /** The name runs from `inner` to `end` (untrimmed). */
  readonly inner: number;
  readonly end: number;
  after: number;
}

class TemplateParser {
  private readonly root: Node[] = [];
  private readonly stack: OpenSection[] = [];
  private children: Node[] = this.root;
  private open = '{{';
  private close = '}}';
  private pos = 0;
  /** End of the previous tag: a tag is standalone only if nothing but indentation precedes it on its line. */
  private lastTagEnd = -1;

  constructor(private readonly source: string) {}

  parse(): Node[] {
    const source = this.source;
    for (;;) {
      const start = source.indexOf(this.open, this.pos);
      if (start === -1) {
        if (this.pos < source.length)
          this.children.push({ kind: 'text', text: this.pos === 0 ? source : source.slice(this.pos) });
        break;
      }
      const tag = this.readTag(start);
      const textEnd = tag.kind === VARIABLE ? start : this.standaloneTextEnd(tag);
      if (textEnd > this.pos) this.children.push({ kind: 'text', text: source.slice(this.pos, textEnd) });
      this.pos = tag.after;
      this.lastTagEnd = tag.after;
      this.addTag(tag.kind, source.slice(tag.inner, tag.end).trim(), start);
    }
    const unclosed = this.stack.pop();
    if (unclosed)
      throw new TemplateError(
        `line ${lineAt(source, unclosed.at)}: section {{#${unclosed.name}}} is never closed (add {{/${unclosed.name}}})`,
      );
    return this.root;
  }

  /** The tag whose opening delimiter is at `start`. */
  private readTag(start: number): Tag {
    const source = this.source;
    const length = source.length;
    let inner = start + this.open.length;
    let sigil = inner < length ? source.charCodeAt(inner) : -1;
    // Whitespace may separate the opening delimiter from the tag type ("{{ #a }}"), as pystache allows. (Printable
    // ASCII, the usual next character, is decided without a call.)
    if (sigil <= SPACE || sigil >= 0x7f) {
      while (inner < length && isWhitespace(source.charCodeAt(inner))) inner++;
      sigil = inner < length ? source.charCodeAt(inner) : -1;
    }
    const kind = kindOf(sigil);
    const endDelim = sigil === BRACE ? `}${this.close}` : sigil === EQUALS ? `=${this.close}` : this.close;
    const end = source.indexOf(endDelim, sigil === BRACE || sigil === EQUALS ? inner + 1 : inner);
    if (end === -1)
      throw new TemplateError(
        `line ${lineAt(source, start)}: tag opened with "${this.open}" is never closed with "${endDelim}"`,
      );
    if (kind !== VARIABLE || sigil === BRACE || sigil === AMPERSAND) inner++;
    return { kind, start, inner, end, after: end + endDelim.length };
  }

  /**
   * Where the text before a tag other than a variable ends: at the tag, or at the start of its indentation when the
   * tag is standalone: only spaces and tabs between the line start and the tag (and no earlier tag on the line), and
   * the line ends right after the tag. Such a tag takes its indentation and line break with it (`tag.after` moves).
   */
  private standaloneTextEnd(tag: Tag): number {
    const source = this.source;
    let lineStart = tag.start;
    while (lineStart > 0) {
      const c = source.charCodeAt(lineStart - 1);
      if (c !== SPACE && c !== TAB) break;
      lineStart--;
    }
    const atLineStart = lineStart === 0 || source.charCodeAt(lineStart - 1) === LF;
    const next = tag.after < source.length ? source.charCodeAt(tag.after) : -1;
    if (!atLineStart || lineStart < this.lastTagEnd || (next !== -1 && next !== LF && next !== CR)) return tag.start;
    if (next === CR) tag.after++;
    if (tag.after < source.length && source.charCodeAt(tag.after) === LF) tag.after++;
    return lineStart;
  }

  private addTag(kind: number, name: string, start: number): void {
    if (name === '' && kind !== SET_DELIMITERS && kind !== COMMENT_OR_PARTIAL) throw emptyName(this.source, start);
    switch (kind) {
      case VARIABLE:
        this.children.push({ kind: 'var', name, path: namePath(name) });
        break;
      case OPEN_SECTION:
      case OPEN_INVERTED: {
        const section: OpenSection = { name, inverted: kind === OPEN_INVERTED, children: [], at: start };
        this.stack.push(section);
        this.children = section.children;
        break;
      }
      case CLOSE_SECTION:
        this.closeSection(name, start);
        break;
      case SET_DELIMITERS:
        this.setDelimiters(name, start);
        break;
      default:
      // Comments, and partials (os-apply-config's renderer has none: they render as nothing).
    }
  }

  private closeSection(name: string, start: number): void {
    const section = this.stack.pop();
    if (!section)
      throw new TemplateError(
        `line ${lineAt(this.source, start)}: closing tag {{/${name}}} has no matching opening tag`,
      );
    if (section.name !== name) {
      throw new TemplateError(
        `line ${lineAt(this.source, start)}: closing tag {{/${name}}} does not match the section {{#${section.name}}} opened on line ${lineAt(this.source, section.at)}`,
      );
    }
    this.children = this.stack.length > 0 ? (this.stack[this.stack.length - 1] as OpenSection).children : this.root;
    this.children.push({
      kind: 'section',
      name: section.name,
      path: namePath(section.name),
      inverted: section.inverted,
      children: section.children,
    });
  }

  private setDelimiters(name: string, start: number): void {
    const parts = name.split(/\s+/).filter((p) => p !== '');
    if (parts.length !== 2 || parts.some((p) => p.includes('='))) {
      throw new TemplateError(
        `line ${lineAt(this.source, start)}: set-delimiter tag needs two delimiters separated by a space, as in {{=<% %>=}}`,
      );
    }
    this.open = parts[0] as string;
    this.close = parts[1] as string;
  }
}

/** The kind of tag the character after the opening delimiter (and any whitespace) makes. */
function kindOf(sigil: number): number {
  switch (sigil) {
    case 0x23: // #
      return OPEN_SECTION;
    case 0x5e: // ^
      return OPEN_INVERTED;
    case 0x2f: // /
      return CLOSE_SECTION;
    case EQUALS:
      return SET_DELIMITERS;
    case 0x21: // !
    case 0x3e: // >
      return COMMENT_OR_PARTIAL;
    default:
      // Plain, {{{triple}}} and {{&ampersand}} variables are all the same here (no HTML escaping).
      return VARIABLE;
  }
}

// Tag kinds. Every kind but a variable can stand alone on its line.
const VARIABLE = 0;
const OPEN_SECTION = 1;
const OPEN_INVERTED = 2;
const CLOSE_SECTION = 3;
const SET_DELIMITERS = 4;
const COMMENT_OR_PARTIAL = 5;
const AMPERSAND = 0x26; // &

/** What /\s/ matches, with the common ASCII answers decided without a regular expression. */
function isWhitespace(c: number): boolean {
  if (c > SPACE && c < 0x7f) return false;
  if (c === SPACE || (c >= TAB && c <= CR)) return true;
  return c >= 0x80 && /\s/.test(String.fromCharCode(c));
}

/** 1-based line of `index` (for error messages only). */
function lineAt(source: string, index: number): number {
  let line = 1;
  for (let i = source.indexOf('\n'); i !== -1 && i < index; i = source.indexOf('\n', i + 1)) line++;
  return line;
}

function emptyName(source: string, at: number): TemplateError {
  return new TemplateError(`line ${lineAt(source, at)}: empty tag name`);
}

/** The dotted name split once here, not at every lookup ("." stays whole: it names the current item). */
function namePath(name: string): readonly string[] {
  return name === '.' || name.indexOf('.') === -1 ? [name] : name.split('.');
}
