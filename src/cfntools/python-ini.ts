// INI files as Python's configparser reads them, which is how heat-cfntools read cfn-hup.conf, hooks.conf, hooks.d and
// boto's cfn-boto-cfg: "[section]" headers, "key = value" or "key: value" (the first "=" or ":" splits; keys are
// lower-cased, both sides trimmed), whole-line comments starting with "#" or ";", indented lines continuing the value
// before them, a DEFAULT section every other section inherits from, and a section or key given twice in one file
// refused. Values are interpolated as configparser's default does: "%%" is "%", "%(key)s" is another key's value of
// the same section (or DEFAULT), and any other "%" is an error, so an action written for heat-cfntools runs the same.

export interface IniSection {
  readonly name: string;
  /** The file and line of its first header, for messages. */
  readonly file: string;
  readonly line: number;
  /** Raw values by lower-cased key (later files win over earlier ones). */
  readonly values: Map<string, string>;
}

export interface IniDocument {
  /** Sections in order of first appearance, DEFAULT excluded. */
  readonly sections: IniSection[];
  readonly defaults: Map<string, string>;
}

/** A syntax error, with the file and line. */
export class IniSyntaxError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    reason: string,
  ) {
    super(`${file} line ${line}: ${reason}`);
    this.name = 'IniSyntaxError';
  }
}

const MAX_INTERPOLATION_DEPTH = 10;

export function emptyIni(): IniDocument {
  return { sections: [], defaults: new Map() };
}

/** Reads one file's text into `doc` (sections of the same name in earlier files are extended, as read_file does). */
export function readIni(doc: IniDocument, text: string, file: string): void {
  const seenSections = new Set<string>();
  let current: Map<string, string> | undefined;
  let seenKeys = new Set<string>();
  let lastKey: string | undefined;
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '' || /^\s*[#;]/.test(raw)) {
      if (raw.trim() === '') lastKey = undefined;
      return;
    }
    if (/^\s/.test(raw) && current && lastKey !== undefined) {
      current.set(lastKey, `${current.get(lastKey) ?? ''}\n${raw.trim()}`);
      return;
    }
    const header = /^\[([^\]]+)\]\s*$/.exec(raw);
    if (header) {
      const name = header[1]!;
      if (seenSections.has(name)) throw new IniSyntaxError(file, line, `section [${name}] appears twice`);
      seenSections.add(name);
      current = name === 'DEFAULT' ? doc.defaults : sectionOf(doc, name, file, line).values;
      seenKeys = new Set();
      lastKey = undefined;
      return;
    }
    if (!current) throw new IniSyntaxError(file, line, 'a line before the first [section] header');
    const split = raw.search(/[=:]/);
    if (split <= 0) throw new IniSyntaxError(file, line, `"${raw.trim()}" is not "key = value"`);
    const key = raw.slice(0, split).trim().toLowerCase();
    if (key === '') throw new IniSyntaxError(file, line, 'a value without a key');
    if (seenKeys.has(key)) throw new IniSyntaxError(file, line, `"${key}" is given twice in this section`);
    seenKeys.add(key);
    current.set(key, raw.slice(split + 1).trim());
    lastKey = key;
  });
}

function sectionOf(doc: IniDocument, name: string, file: string, line: number): IniSection {
  const found = doc.sections.find((s) => s.name === name);
  if (found) return found;
  const section: IniSection = { name, file, line, values: new Map() };
  doc.sections.push(section);
  return section;
}

/** A key's value with DEFAULT behind it and interpolation applied; undefined when neither has the key. */
export function iniValue(doc: IniDocument, section: IniSection, key: string): string | undefined {
  const raw = section.values.get(key) ?? doc.defaults.get(key);
  if (raw === undefined) return undefined;
  return interpolate(raw, (name) => section.values.get(name) ?? doc.defaults.get(name), `[${section.name}] ${key}`);
}

function interpolate(value: string, lookup: (key: string) => string | undefined, where: string, depth = 0): string {
  if (depth > MAX_INTERPOLATION_DEPTH) throw new Error(`${where}: "%(...)s" references nest too deeply`);
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c !== '%') {
      out += c;
      continue;
    }
    if (value[i + 1] === '%') {
      out += '%';
      i++;
      continue;
    }
    const ref = /^%\(([^)]+)\)s/.exec(value.slice(i));
    if (!ref) throw new Error(`${where}: a lone "%" (write "%%" for a percent sign, as heat-cfntools' parser needs)`);
    const name = ref[1]!.toLowerCase();
    const target = lookup(name);
    if (target === undefined) throw new Error(`${where}: "%(${ref[1]})s" names no key of this section`);
    out += interpolate(target, lookup, where, depth + 1);
    i += ref[0].length - 1;
  }
  return out;
}
