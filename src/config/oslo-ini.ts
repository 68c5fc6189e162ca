// Reader and writer for oslo.config INI files, the format of /etc/os-collect-config.conf.
//
// Why not the `ini` package: it cuts values at an unquoted ';' or '#' (a password "ab#cd" would become "ab") and
// folds repeated keys differently; oslo.config keeps the whole value and treats a repeated key as one more value of
// a multi-valued option (`collectors = cfn` then `collectors = local`). Existing files must read exactly as before.

export type IniDocument = Map<string, Map<string, string[]>>;

export interface IniProblem {
  line: number;
  message: string;
}

export interface IniParseResult {
  doc: IniDocument;
  problems: IniProblem[];
}

export function parseOsloIni(text: string): IniParseResult {
  const doc: IniDocument = new Map();
  const problems: IniProblem[] = [];
  let section: Map<string, string[]> | undefined;
  let lastValues: string[] | undefined;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? '';
    const lineNo = i + 1;
    if (raw.trim() === '') {
      lastValues = undefined;
      continue;
    }
    // A comment line ends the value above it, as in oslo.config (an indented line after it is not a continuation).
    if (/^[#;]/.test(raw)) {
      lastValues = undefined;
      continue;
    }
    // Continuation line: indented text extends the previous value.
    if (/^\s/.test(raw) && lastValues && lastValues.length > 0) {
      lastValues[lastValues.length - 1] += `\n${raw.trim()}`;
      continue;
    }
    const line = raw.trim();
    if (line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) {
      const name = sectionName(line);
      if (name === undefined) {
        problems.push({ line: lineNo, message: `invalid section header "${line}"` });
        section = undefined;
        continue;
      }
      section = doc.get(name);
      if (!section) {
        section = new Map();
        doc.set(name, section);
      }
      lastValues = undefined;
      continue;
    }
    if (!section) {
      problems.push({ line: lineNo, message: 'option outside any [section]' });
      continue;
    }
    const option = keyAndValue(line);
    if (!option) {
      problems.push({ line: lineNo, message: `expected "key = value", got "${truncate(line)}"` });
      continue;
    }
    const [key, value] = option;
    let values = section.get(key);
    if (!values) {
      values = [];
      section.set(key, values);
    }
    values.push(value);
    lastValues = values;
  }
  return { doc, problems };
}

/** The name in a `[section]` line; undefined when the header is malformed or empty. */
function sectionName(line: string): string | undefined {
  const m = /^\[([^\]]*)\]$/.exec(line);
  const name = (m?.[1] ?? '').trim();
  return name === '' ? undefined : name;
}

/** A `key = value` (or `key: value`) line, split at the first separator; undefined when there is no key. */
function keyAndValue(line: string): [string, string] | undefined {
  const colon = line.indexOf(':');
  const equal = line.indexOf('=');
  const idx = colon === -1 ? equal : equal === -1 ? colon : Math.min(colon, equal);
  if (idx <= 0) return undefined;
  let value = line.slice(idx + 1).trim();
  // oslo.config strips one pair of matching quotes; a lone quote character becomes the empty string there too.
  if (value.length >= 1 && (value[0] === '"' || value[0] === "'") && value[0] === value[value.length - 1]) {
    value = value.slice(1, -1);
  }
  return [line.slice(0, idx).trim(), value];
}

function truncate(s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/**
 * Serialise sections for oslo.config: one `key = value` line per value (repeated for lists), `$` doubled so the
 * value survives oslo's interpolation, and values that would not read back unchanged quoted.
 */
export function stringifyOsloIni(
  sections: ReadonlyArray<[string, ReadonlyArray<[string, string | readonly string[]]>]>,
): string {
  const out: string[] = [];
  for (const [name, entries] of sections) {
    if (out.length > 0) out.push('');
    out.push(`[${name}]`);
    for (const [key, value] of entries) {
      const values = typeof value === 'string' ? [value] : value;
      for (const v of values) out.push(`${key} = ${encodeValue(v)}`);
    }
  }
  return `${out.join('\n')}\n`;
}

// Limit shared with oslo.config: a backslash directly before "$" cannot be written at all (oslo reads "\$" as "$").
function encodeValue(value: string): string {
  const single = value.replace(/\r?\n/g, ' ').replace(/\$/g, '$$$$');
  const needsQuotes = single !== single.trim() || /^["']/.test(single);
  return needsQuotes ? `"${single}"` : single;
}

/**
 * oslo.config string interpolation: `$name` and `${name}` take the value of another option (the caller's lookup
 * decides which: same section, then [DEFAULT]; `group.name` names another section); `$$` and `\$` are a literal `$`.
 * Names follow oslo's pattern: a letter or `_`, then letters, digits, `_` and `.`, any case. Unknown names are left as
 * written and reported (upstream aborts startup there).
 */
export function interpolate(
  value: string,
  lookup: (name: string) => string | undefined,
  onUnknown: (name: string) => void,
): string {
  return value.replace(
    /\\\$|\$(\$|\{([A-Za-z_][A-Za-z0-9_.]*)\}|([A-Za-z_][A-Za-z0-9_.]*))/g,
    (whole, _all: string, braced?: string, bare?: string) => {
      if (whole === '$$' || whole === '\\$') return '$';
      const name = braced ?? bare ?? '';
      const found = lookup(name);
      if (found === undefined) {
        onUnknown(name);
        return whole;
      }
      return found;
    },
  );
}
