import { TemplateError } from './apply-errors.js';

// Mustache parser with the spec's whitespace rules (standalone section, comment, partial and delimiter tags drop
// their whole line), as pystache applies them. Unlike pystache, an unclosed tag, an unclosed or mismatched section
// and an empty tag are errors: upstream silently rendered them as text or closed the section at the end of the file.

export type Node =
  | { kind: 'text'; text: string }
  | { kind: 'var'; name: string; path: readonly string[]; line: number }
  | { kind: 'section'; name: string; path: readonly string[]; inverted: boolean; children: Node[]; line: number };

interface OpenSection {
  name: string;
  inverted: boolean;
  children: Node[];
  line: number;
}

const STANDALONE_KINDS = new Set(['#', '^', '/', '!', '>', '=']);

export function parseTemplate(source: string): Node[] {
  return new TemplateParser(source).parse();
}

// A class rather than closures inside parseTemplate: the bundle keeps function names (readable stack traces), which
// costs a defineProperty for every closure created, and templates are parsed by the thousand.
class TemplateParser {
  private open = '{{';
  private close = '}}';
  private readonly root: Node[] = [];
  private readonly stack: OpenSection[] = [];
  private lineNo = 1;
  private counted = 0;

  constructor(private readonly source: string) {}

  parse(): Node[] {
    const { source } = this;
    let pos = 0;
    // End of the previous tag: a tag is standalone only if nothing but indentation precedes it on its line.
    let lastTagEnd = -1;
    while (pos < source.length) {
      const start = source.indexOf(this.open, pos);
      if (start === -1) {
        this.pushText(source.slice(pos));
        break;
      }
      const line = this.lineOf(start);
      let inner = start + this.open.length;
      // Whitespace may separate the opening delimiter from the tag type ("{{ #a }}"), as pystache allows.
      while (inner < source.length && /\s/.test(source[inner] as string)) inner++;
      let kind = source[inner] ?? '';
      let endDelim = this.close;
      if (kind === '{') endDelim = `}${this.close}`;
      else if (kind === '=') endDelim = `=${this.close}`;
      const end = source.indexOf(endDelim, kind === '{' || kind === '=' ? inner + 1 : inner);
      if (end === -1) throw new TemplateError(`line ${line}: tag opened with "${this.open}" is never closed with "${endDelim}"`);
      if (kind !== '' && '{&#^/!>='.includes(kind)) inner++;
      else kind = '';
      const content = source.slice(inner, end);
      let after = end + endDelim.length;

      // Standalone: only spaces/tabs between the line start and the tag (and no earlier tag on the line), and the
      // line ends right after the tag. Such a tag takes its indentation and line break with it.
      let textBefore = source.slice(pos, start);
      if (STANDALONE_KINDS.has(kind)) {
        const lineStart = source.lastIndexOf('\n', start - 1) + 1;
        const before = source.slice(lineStart, start);
        const next = source[after];
        if (lineStart >= lastTagEnd && /^[ \t]*$/.test(before) && (next === undefined || next === '\n' || next === '\r')) {
          textBefore = textBefore.slice(0, textBefore.length - before.length);
          if (source[after] === '\r') after++;
          if (source[after] === '\n') after++;
        }
      }
      this.pushText(textBefore);
      pos = after;
      lastTagEnd = after;
      this.tag(kind, content.trim(), line);
    }
    const unclosed = this.stack.pop();
    if (unclosed) throw new TemplateError(`line ${unclosed.line}: section {{#${unclosed.name}}} is never closed (add {{/${unclosed.name}}})`);
    return this.root;
  }

  private tag(kind: string, name: string, line: number): void {
    switch (kind) {
      case '!':
        break;
      case '>':
        // Partials are not supported by os-apply-config's renderer: they render as nothing.
        break;
      case '=': {
        const parts = name.split(/\s+/).filter((p) => p !== '');
        if (parts.length !== 2 || parts.some((p) => p.includes('='))) {
          throw new TemplateError(`line ${line}: set-delimiter tag needs two delimiters separated by a space, as in {{=<% %>=}}`);
        }
        this.open = parts[0] as string;
        this.close = parts[1] as string;
        break;
      }
      case '#':
      case '^':
        requireName(name, line);
        this.stack.push({ name, inverted: kind === '^', children: [], line });
        break;
      case '/': {
        requireName(name, line);
        const section = this.stack.pop();
        if (!section) throw new TemplateError(`line ${line}: closing tag {{/${name}}} has no matching opening tag`);
        if (section.name !== name) {
          throw new TemplateError(`line ${line}: closing tag {{/${name}}} does not match the section {{#${section.name}}} opened on line ${section.line}`);
        }
        this.current().push({ kind: 'section', name: section.name, path: namePath(section.name), inverted: section.inverted, children: section.children, line: section.line });
        break;
      }
      default:
        requireName(name, line);
        this.current().push({ kind: 'var', name, path: namePath(name), line });
    }
  }

  private current(): Node[] {
    const top = this.stack[this.stack.length - 1];
    return top ? top.children : this.root;
  }

  private pushText(text: string): void {
    if (text !== '') this.current().push({ kind: 'text', text });
  }

  /** Line number of `index`, counting newlines incrementally (tags come in order). */
  private lineOf(index: number): number {
    const { source } = this;
    for (let i = source.indexOf('\n', this.counted); i !== -1 && i < index; i = source.indexOf('\n', i + 1)) this.lineNo++;
    this.counted = Math.max(this.counted, index);
    return this.lineNo;
  }
}

/** The dotted name split once here, not at every lookup ("." stays whole: it names the current item). */
function namePath(name: string): readonly string[] {
  return name === '.' || !name.includes('.') ? [name] : name.split('.');
}

function requireName(name: string, line: number): void {
  if (name === '') throw new TemplateError(`line ${line}: empty tag name`);
}
