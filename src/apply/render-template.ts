import { isJsonObject } from '../util/json-merge.js';
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

export function renderTemplate(source: string, context: unknown): RenderResult {
  const nodes = parseTemplate(source);
  const missing = new Set<string>();
  const out: string[] = [];
  renderNodes(nodes, [context], out, missing);
  return { text: out.join(''), missing: [...missing] };
}

/** How a value interpolates: strings as they are, null as nothing, anything else as compact Python JSON. */
export function interpolateValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  return pythonJsonDumps(value);
}

/** Python truthiness of a JSON value: false, null, 0, "", [] and {} are false. */
export function isTruthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (isJsonObject(value)) return Object.keys(value).length > 0;
  return true;
}

function renderNodes(nodes: readonly Node[], stack: unknown[], out: string[], missing: Set<string>): void {
  for (const node of nodes) {
    if (node.kind === 'text') {
      out.push(node.text);
      continue;
    }
    const value = lookup(node.path, stack);
    if (node.kind === 'var') {
      if (value === MISSING) missing.add(node.name);
      else out.push(interpolateValue(value));
      continue;
    }
    const truthy = value !== MISSING && isTruthy(value);
    if (node.inverted) {
      if (!truthy) renderNodes(node.children, stack, out, missing);
      continue;
    }
    if (!truthy) continue;
    if (Array.isArray(value)) {
      for (const item of value) {
        stack.push(item);
        renderNodes(node.children, stack, out, missing);
        stack.pop();
      }
    } else {
      stack.push(value);
      renderNodes(node.children, stack, out, missing);
      stack.pop();
    }
  }
}

/**
 * Resolve a tag's dotted path against the context stack: "." is the innermost value; otherwise the first segment is
 * looked up from the innermost object outwards and the remaining segments inside that value only.
 */
function lookup(parts: readonly string[], stack: readonly unknown[]): unknown {
  const first = parts[0] as string;
  if (first === '.') return stack[stack.length - 1];
  let value: unknown = MISSING;
  for (let i = stack.length - 1; i >= 0; i--) {
    const found = ownMember(stack[i], first);
    if (found !== MISSING) {
      value = found;
      break;
    }
  }
  for (let i = 1; i < parts.length && value !== MISSING; i++) value = ownMember(value, parts[i] as string);
  return value;
}

/** `value[key]` when value is a JSON object that has key as its own property; MISSING otherwise. */
function ownMember(value: unknown, key: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return MISSING;
  // JSON never holds undefined, so undefined means "absent"; a defined result is checked for being the object's own
  // only when the key also names something inherited ("constructor", "toString", ...).
  const member = (value as Record<string, unknown>)[key];
  if (member === undefined) return MISSING;
  return key in Object.prototype && !Object.hasOwn(value, key) ? MISSING : member;
}
