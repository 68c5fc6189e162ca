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
  const root: Node[] = [];
  const stack: OpenSection[] = [];
  let children = root;
  let open = '{{';
  let close = '}}';
  let pos = 0;
  // End of the previous tag: a tag is standalone only if nothing but indentation precedes it on its line.
  let lastTagEnd = -1;
  const length = source.length;
  for (;;) {
    const start = source.indexOf(open, pos);
    if (start === -1) {
      if (pos < length) children.push({ kind: 'text', text: pos === 0 ? source : source.slice(pos) });
      break;
    }
    let inner = start + open.length;
    let sigil = inner < length ? source.charCodeAt(inner) : -1;
    // Whitespace may separate the opening delimiter from the tag type ("{{ #a }}"), as pystache allows. (Printable
    // ASCII, the usual next character, is decided without a call.)
    if (sigil <= SPACE || sigil >= 0x7f) {
      while (inner < length && isWhitespace(source.charCodeAt(inner))) inner++;
      sigil = inner < length ? source.charCodeAt(inner) : -1;
    }
    let kind = VARIABLE;
    switch (sigil) {
      case 0x23: // #
        kind = OPEN_SECTION;
        break;
      case 0x5e: // ^
        kind = OPEN_INVERTED;
        break;
      case 0x2f: // /
        kind = CLOSE_SECTION;
        break;
      case EQUALS:
        kind = SET_DELIMITERS;
        break;
      case 0x21: // !
      case 0x3e: // >
        kind = COMMENT_OR_PARTIAL;
        break;
      default:
      // Plain, {{{triple}}} and {{&ampersand}} variables are all the same here (no HTML escaping).
    }
    const endDelim = sigil === BRACE ? `}${close}` : sigil === EQUALS ? `=${close}` : close;
    const end = source.indexOf(endDelim, sigil === BRACE || sigil === EQUALS ? inner + 1 : inner);
    if (end === -1)
      throw new TemplateError(
        `line ${lineAt(source, start)}: tag opened with "${open}" is never closed with "${endDelim}"`,
      );
    if (kind !== VARIABLE || sigil === BRACE || sigil === AMPERSAND) inner++;
    let after = end + endDelim.length;
    // Text before the tag ends at the tag, or at the start of its indentation when the tag is standalone: only spaces
    // and tabs between the line start and the tag (and no earlier tag on the line), and the line ends right after the
    // tag. Such a tag takes its indentation and line break with it.
    let textEnd = start;
    if (kind !== VARIABLE) {
      let lineStart = start;
      while (lineStart > 0) {
        const c = source.charCodeAt(lineStart - 1);
        if (c !== SPACE && c !== TAB) break;
        lineStart--;
      }
      const atLineStart = lineStart === 0 || source.charCodeAt(lineStart - 1) === LF;
      const next = after < length ? source.charCodeAt(after) : -1;
      if (atLineStart && lineStart >= lastTagEnd && (next === -1 || next === LF || next === CR)) {
        textEnd = lineStart;
        if (next === CR) after++;
        if (after < length && source.charCodeAt(after) === LF) after++;
      }
    }
    if (textEnd > pos) children.push({ kind: 'text', text: source.slice(pos, textEnd) });
    pos = after;
    lastTagEnd = after;
    const name = source.slice(inner, end).trim();
    switch (kind) {
      case VARIABLE:
        if (name === '') throw emptyName(source, start);
        children.push({ kind: 'var', name, path: namePath(name) });
        break;
      case OPEN_SECTION:
      case OPEN_INVERTED:
        if (name === '') throw emptyName(source, start);
        stack.push({ name, inverted: kind === OPEN_INVERTED, children: [], at: start });
        children = (stack[stack.length - 1] as OpenSection).children;
        break;
      case CLOSE_SECTION: {
        if (name === '') throw emptyName(source, start);
        const section = stack.pop();
        if (!section)
          throw new TemplateError(
            `line ${lineAt(source, start)}: closing tag {{/${name}}} has no matching opening tag`,
          );
        if (section.name !== name) {
          throw new TemplateError(
            `line ${lineAt(source, start)}: closing tag {{/${name}}} does not match the section {{#${section.name}}} opened on line ${lineAt(source, section.at)}`,
          );
        }
        children = stack.length > 0 ? (stack[stack.length - 1] as OpenSection).children : root;
        children.push({
          kind: 'section',
          name: section.name,
          path: namePath(section.name),
          inverted: section.inverted,
          children: section.children,
        });
        break;
      }
      case SET_DELIMITERS: {
        const parts = name.split(/\s+/).filter((p) => p !== '');
        if (parts.length !== 2 || parts.some((p) => p.includes('='))) {
          throw new TemplateError(
            `line ${lineAt(source, start)}: set-delimiter tag needs two delimiters separated by a space, as in {{=<% %>=}}`,
          );
        }
        open = parts[0] as string;
        close = parts[1] as string;
        break;
      }
      default:
      // Comments, and partials (os-apply-config's renderer has none: they render as nothing).
    }
  }
  const unclosed = stack.pop();
  if (unclosed)
    throw new TemplateError(
      `line ${lineAt(source, unclosed.at)}: section {{#${unclosed.name}}} is never closed (add {{/${unclosed.name}}})`,
    );
  return root;
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
