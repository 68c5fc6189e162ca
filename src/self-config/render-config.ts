import type { CollectedPair } from '../collectors/types.js';
import { DEFAULT_COLLECTORS, sectionSpecs } from '../config/options.js';
import { stringifyOsloIni, type IniDocument } from '../config/oslo-ini.js';
import { deepMerge, isJsonObject, type JsonObject } from '../util/json-merge.js';

// Heat tells the agent how to poll through an `os-collect-config` key in the server metadata (collectors list plus
// cfn / heat / zaqar / request credentials). Upstream rendered /etc/os-collect-config.conf from it with an
// os-apply-config template; this module produces the same file from the same data, as pure functions:
// - the `os-collect-config` values of all pairs are deep-merged in order (os-apply-config's merge: later wins);
// - [DEFAULT]: command, polling_interval, cachedir, splay and collectors (one line per collector) from the metadata;
//   when the metadata does not name one, the existing file's line is kept (command falls back to
//   os-refresh-config, as the template did); every other existing [DEFAULT] line is kept too;
// - [cfn], [heat], [zaqar], [request]: from the metadata only, as the template did (an old transport disappears);
// - every other section of the existing file ([agent], [apply], [refresh], [deploy], [local], ...) is kept;
// - null (and empty) values mean "unset": the line is left out. Heat nulls the old transport's values when the
//   transport changes, so those sections vanish.

const AGENT_SECTION_KEY = 'os-collect-config';
export const TRANSPORT_SECTIONS = ['cfn', 'heat', 'zaqar', 'request'] as const;
const MANAGED_DEFAULTS = ['command', 'polling_interval', 'cachedir', 'splay'] as const;
const DEFAULT_COMMAND = 'os-refresh-config';
const HEADER =
  '# Written by os-config-agent from the os-collect-config metadata Heat provides.\n# [DEFAULT] lines Heat does not set and sections other than cfn/heat/zaqar/request are kept on rewrite.\n';

export type Warn = (fields: Record<string, unknown>, message: string) => void;

/** The merged `os-collect-config` object of all pairs, or undefined when no pair carries one. */
export function mergedAgentSection(pairs: readonly CollectedPair[]): JsonObject | undefined {
  let merged: JsonObject | undefined;
  for (const pair of pairs) {
    if (!isJsonObject(pair.value)) continue;
    const section = pair.value[AGENT_SECTION_KEY];
    if (!isJsonObject(section)) continue;
    merged = deepMerge(merged ?? {}, section);
  }
  return merged;
}

type Entry = [string, string | readonly string[]];
interface SectionOut {
  literal: Entry[];
  /** Lines from the existing file that cannot be expressed as literal values (they use $name interpolation). */
  raw: string[];
}

/** The config file text for `section` (merged os-collect-config), keeping what `existing` holds outside Heat's reach. */
export function renderAgentConfig(section: JsonObject, existing: IniDocument | undefined, warn: Warn): string {
  const old = existing ?? new Map<string, Map<string, string[]>>();
  const sections: Array<[string, SectionOut]> = [['DEFAULT', defaultSection(section, old.get('DEFAULT'), warn)]];
  // Transport sections: the metadata alone decides.
  for (const name of TRANSPORT_SECTIONS) {
    const value = section[name];
    if (value === undefined || value === null) continue;
    if (!isJsonObject(value)) {
      warn({ section: name }, 'os-collect-config section is not an object; ignored');
      continue;
    }
    const out = transportSection(name, value, warn);
    if (out.literal.length > 0) sections.push([name, out]);
  }
  // Everything else the existing file holds.
  for (const [name, options] of old) {
    if (name === 'DEFAULT' || (TRANSPORT_SECTIONS as readonly string[]).includes(name.toLowerCase())) continue;
    const out: SectionOut = { literal: [], raw: [] };
    for (const [key, values] of options) keep(out, key, values);
    sections.push([name, out]);
  }
  return HEADER + sections.map(([name, out]) => sectionText(name, out)).join('\n');
}

/**
 * [DEFAULT]: command, polling_interval, cachedir and splay from the metadata, else the existing file's line (command
 * falls back to os-refresh-config); collectors likewise, one line each; every other existing line is kept.
 */
function defaultSection(section: JsonObject, existing: Map<string, string[]> | undefined, warn: Warn): SectionOut {
  const def: SectionOut = { literal: [], raw: [] };
  const oldDefault = existing ?? new Map<string, string[]>();
  const fromMeta = (key: string): { set: boolean; values?: string[] } => {
    if (!Object.prototype.hasOwnProperty.call(section, key)) return { set: false };
    const values = scalarValues(section[key], `${AGENT_SECTION_KEY}.${key}`, warn, key === 'collectors');
    return { set: true, ...(values ? { values } : {}) };
  };
  for (const key of MANAGED_DEFAULTS) {
    const meta = fromMeta(key);
    if (meta.set) {
      if (meta.values && meta.values.length > 0) def.literal.push([key, meta.values.at(-1)!]);
      else if (key === 'command') def.literal.push([key, DEFAULT_COMMAND]);
    } else if (oldDefault.has(key)) keep(def, key, oldDefault.get(key)!);
    else if (key === 'command') def.literal.push([key, DEFAULT_COMMAND]);
  }
  for (const [key, values] of oldDefault) {
    if ((MANAGED_DEFAULTS as readonly string[]).includes(key) || key === 'collectors') continue;
    keep(def, key, values);
  }
  const collectors = fromMeta('collectors');
  if (collectors.set) {
    const names: string[] = [];
    for (const name of collectors.values ?? []) {
      if ((DEFAULT_COLLECTORS as readonly string[]).includes(name)) names.push(name);
      else
        warn(
          { collector: name.slice(0, 40) },
          'os-collect-config names an unknown collector; left out of the configuration',
        );
    }
    if (names.length > 0) def.literal.push(['collectors', names]);
  } else if (oldDefault.has('collectors')) keep(def, 'collectors', oldDefault.get('collectors')!);
  return def;
}

/** A transport section ([cfn], [heat], [zaqar], [request]) from the metadata's object alone; unknown options left out. */
function transportSection(name: (typeof TRANSPORT_SECTIONS)[number], value: JsonObject, warn: Warn): SectionOut {
  const out: SectionOut = { literal: [], raw: [] };
  const specs = sectionSpecs(name);
  for (const [key, v] of Object.entries(value)) {
    const spec = Object.hasOwn(specs, key) ? specs[key] : undefined;
    if (!spec) {
      warn(
        { section: name, option: key.slice(0, 40) },
        'os-collect-config names an unknown option; left out of the configuration',
      );
      continue;
    }
    const values = scalarValues(v, `${AGENT_SECTION_KEY}.${name}.${key}`, warn, spec.kind === 'multi');
    if (!values || values.length === 0) continue;
    out.literal.push([key, spec.kind === 'multi' ? values : values.at(-1)!]);
  }
  return out;
}

/** Metadata value -> option values; null and "" mean unset (undefined). Objects, and lists where one value is due, are refused. */
function scalarValues(value: unknown, where: string, warn: Warn, list: boolean): string[] | undefined {
  if (value === null || value === undefined) return undefined;
  const items = Array.isArray(value) ? value : [value];
  if (Array.isArray(value) && !list) {
    warn({ option: where }, 'os-collect-config value is a list where one value is expected; ignored');
    return undefined;
  }
  const out: string[] = [];
  for (const item of items) {
    if (item === null || item === undefined || item === '') continue;
    if (typeof item === 'string') out.push(item);
    else if (typeof item === 'number' && Number.isFinite(item)) out.push(String(item));
    else if (typeof item === 'boolean') out.push(item ? 'true' : 'false');
    else {
      warn({ option: where }, 'os-collect-config value is not a string, number or boolean; ignored');
      return undefined;
    }
  }
  return out;
}

/**
 * Keep an existing line. Values are held as written (oslo reads `$$` as `$` and `$name` as a reference): a value
 * whose only `$`s are `$$` becomes a literal again; one with references is copied raw so it reads back the same.
 */
function keep(out: SectionOut, key: string, rawValues: readonly string[]): void {
  for (const raw of rawValues) {
    const literal = rawToLiteral(raw);
    if (literal !== undefined) out.literal.push([key, literal]);
    else out.raw.push(rawLine(key, raw));
  }
}

function rawToLiteral(raw: string): string | undefined {
  if (raw.includes('\n') || raw.includes('\\$')) return undefined;
  if (raw.replace(/\$\$/g, '').includes('$')) return undefined;
  return raw.replace(/\$\$/g, '$');
}

function rawLine(key: string, raw: string): string {
  const [first = '', ...rest] = raw.split('\n');
  const needsQuotes = first !== first.trim() || /^["']/.test(first);
  return [`${key} = ${needsQuotes ? `"${first}"` : first}`, ...rest.map((l) => `    ${l}`)].join('\n');
}

function sectionText(name: string, out: SectionOut): string {
  // stringifyOsloIni joins repeated keys' values itself; group literal entries by key to keep multi-valued options whole.
  const grouped = new Map<string, string[]>();
  for (const [key, value] of out.literal)
    grouped.set(key, [...(grouped.get(key) ?? []), ...(typeof value === 'string' ? [value] : value)]);
  const text = stringifyOsloIni([[name, [...grouped.entries()]]]);
  return out.raw.length > 0 ? `${text}${out.raw.join('\n')}\n` : text;
}
