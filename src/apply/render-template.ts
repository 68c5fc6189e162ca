import { isJsonObject } from '../util/json-merge.js';
import { TemplateError } from './apply-errors.js';
import { ExactNumber } from '../util/exact-number.js';
import { pythonJsonDumps } from '../util/python-json.js';
import { parseTemplate, type Node } from './mustache-parse.js';

// Mustache rendering with os-apply-config's semantics: no HTML escaping ({{x}}, {{{x}}} and {{&x}} are the same),
// strings verbatim, null as nothing, every other value as Python's json.dumps would print it (so {{deployments}}
// yields the JSON list); dotted names walk objects only (no array indexing); missing names render empty and are
// reported to the caller, which warns or fails (strict mode).

export interface RenderResult {
  text: string;
  /** Variable tags whose name did not resolve, in first-seen order, without repeats. */
  missing: string[];
}

const MISSING = Symbol('missing');

/** What one render collects as it goes: the pieces of the text, and the missing variables' names. */
interface Output {
  parts: string[];
  missing: string[];
}

export function renderTemplate(source: string, context: unknown): RenderResult {
  const nodes = parseTemplate(source);
  const out: Output = { parts: [], missing: [] };
  renderNodes(nodes, [context], out);
  return { text: out.parts.join(''), missing: out.missing };
}

/** How a value interpolates: strings as they are, null as nothing, anything else as compact Python JSON. */
export function interpolateValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  return pythonJsonDumps(value);
}

/** In a `u` regex a surrogate pair is one code point, so only a lone surrogate is of category Cs. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Text a UTF-8 file can hold. A lone surrogate (which JSON carries as "\\ud800") cannot be encoded: os-apply-config
 * dies on it with UnicodeEncodeError, and writing U+FFFD instead would change the value silently.
 */
function writableText(text: string, name: string): string {
  if (!LONE_SURROGATE.test(text)) return text;
  throw new TemplateError(
    `the value of {{${name}}} holds a lone UTF-16 surrogate, which a UTF-8 file cannot hold; fix that value in the metadata`,
  );
}

/** Python truthiness of a JSON value: false, null, 0, "", [] and {} are false. */
export function isTruthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return false;
  if (value instanceof ExactNumber) return value.value !== 0;
  if (Array.isArray(value)) return value.length > 0;
  if (isJsonObject(value)) return Object.keys(value).length > 0;
  return true;
}

// Indexed loops and the name lookup written out in place: os-apply-config runs this once per template in a fresh
// process, and the daemon runs it in V8's lite mode, so most of it is interpreted, where every call and iterator
// step costs.
function renderNodes(nodes: readonly Node[], stack: unknown[], out: Output): void {
  for (let n = 0; n < nodes.length; n++) {
    const node = nodes[n] as Node;
    if (node.kind === 'text') {
      out.parts.push(node.text);
      continue;
    }
    // Resolve the dotted path: "." is the innermost value; otherwise the first segment is looked up from the innermost
    // frame outwards, and the remaining segments inside that value only.
    const path = node.path;
    const first = path[0] as string;
    let value: unknown = MISSING;
    if (first === '.') {
      value = stack[stack.length - 1];
    } else {
      for (let i = stack.length - 1; i >= 0; i--) {
        value = ownMember(stack[i], first);
        if (value !== MISSING) break;
      }
      for (let i = 1; i < path.length && value !== MISSING; i++) value = ownMember(value, path[i] as string);
    }
    if (node.kind === 'var') {
      if (value !== MISSING) out.parts.push(writableText(interpolateValue(value), node.name));
      else if (!out.missing.includes(node.name)) out.missing.push(node.name);
      continue;
    }
    const truthy = value !== MISSING && isTruthy(value);
    if (node.inverted) {
      if (!truthy) renderNodes(node.children, stack, out);
      continue;
    }
    if (!truthy) continue;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        stack.push(value[i]);
        renderNodes(node.children, stack, out);
        stack.pop();
      }
    } else {
      stack.push(value);
      renderNodes(node.children, stack, out);
      stack.pop();
    }
  }
}

/** `value[key]` when value is a JSON object that has key as its own property; MISSING otherwise. */
function ownMember(value: unknown, key: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return MISSING;
  // JSON holds neither undefined nor functions: undefined means "absent", and a function can only be inherited
  // (constructor, toString, ...). The one inherited member that is neither is __proto__.
  const member = (value as Record<string, unknown>)[key];
  if (member === undefined || typeof member === 'function') return MISSING;
  return key === '__proto__' && !Object.hasOwn(value, key) ? MISSING : member;
}
