import { TemplateError } from './apply-errors.js';

// Mustache parser with the spec's whitespace rules (standalone section, comment, partial and delimiter tags drop
// their whole line), as pystache applies them. Unlike pystache, an unclosed tag, an unclosed or mismatched section
// and an empty tag are errors: upstream silently rendered them as text or closed the section at the end of the file.

export type Node =
  | { kind: 'text'; text: string }
  | { kind: 'var'; name: string; line: number }
  | { kind: 'section'; name: string; inverted: boolean; children: Node[]; line: number };

interface OpenSection {
  name: string;
  inverted: boolean;
  children: Node[];
  line: number;
}

const STANDALONE_KINDS = new Set(['#', '^', '/', '!', '>', '=']);

export function parseTemplate(source: string): Node[] {
  let open = '{{';
  let close = '}}';
  const root: Node[] = [];
  const stack: OpenSection[] = [];
  const current = (): Node[] => (stack.length > 0 ? (stack[stack.length - 1] as OpenSection).children : root);
  let pos = 0;
  // End of the previous tag: a tag is standalone only if nothing but indentation precedes it on its line.
  let lastTagEnd = -1;
  let lineNo = 1;
  let counted = 0;
  const lineOf = (index: number): number => {
    for (let i = source.indexOf('\n', counted); i !== -1 && i < index; i = source.indexOf('\n', i + 1)) lineNo++;
    counted = Math.max(counted, index);
    return lineNo;
  };

  const pushText = (text: string) => {
    if (text !== '') current().push({ kind: 'text', text });
  };

  while (pos < source.length) {
    const start = source.indexOf(open, pos);
    if (start === -1) {
      pushText(source.slice(pos));
      break;
    }
    const line = lineOf(start);
    let inner = start + open.length;
    // Whitespace may separate the opening delimiter from the tag type ("{{ #a }}"), as pystache allows.
    while (inner < source.length && /\s/.test(source[inner] as string)) inner++;
    let kind = source[inner] ?? '';
    let endDelim = close;
    if (kind === '{') endDelim = `}${close}`;
    else if (kind === '=') endDelim = `=${close}`;
    const end = source.indexOf(endDelim, kind === '{' || kind === '=' ? inner + 1 : inner);
    if (end === -1) throw new TemplateError(`line ${line}: tag opened with "${open}" is never closed with "${endDelim}"`);
    if ('{&#^/!>='.includes(kind) && kind !== '') inner++;
    else kind = '';
    const content = source.slice(inner, end);
    let after = end + endDelim.length;

    // Standalone: only spaces/tabs between the line start and the tag (and no earlier tag on the line), and the line
    // ends right after the tag. Such a tag takes its indentation and line break with it.
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
    pushText(textBefore);
    pos = after;
    lastTagEnd = after;

    const name = content.trim();
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
        open = parts[0] as string;
        close = parts[1] as string;
        break;
      }
      case '#':
      case '^':
        requireName(name, line);
        stack.push({ name, inverted: kind === '^', children: [], line });
        break;
      case '/': {
        requireName(name, line);
        const section = stack.pop();
        if (!section) throw new TemplateError(`line ${line}: closing tag {{/${name}}} has no matching opening tag`);
        if (section.name !== name) {
          throw new TemplateError(`line ${line}: closing tag {{/${name}}} does not match the section {{#${section.name}}} opened on line ${section.line}`);
        }
        current().push({ kind: 'section', name: section.name, inverted: section.inverted, children: section.children, line: section.line });
        break;
      }
      default:
        requireName(name, line);
        current().push({ kind: 'var', name, line });
    }
  }
  const unclosed = stack.pop();
  if (unclosed) throw new TemplateError(`line ${unclosed.line}: section {{#${unclosed.name}}} is never closed (add {{/${unclosed.name}}})`);
  return root;
}

function requireName(name: string, line: number): void {
  if (name === '') throw new TemplateError(`line ${line}: empty tag name`);
}
