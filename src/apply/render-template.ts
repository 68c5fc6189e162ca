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
    const value = lookup(node.name, stack);
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
 * Resolve a tag name against the context stack: "." is the innermost value; otherwise the first segment is looked up
 * from the innermost object outwards and the remaining segments inside that value only.
 */
function lookup(name: string, stack: readonly unknown[]): unknown {
  if (name === '.') return stack[stack.length - 1];
  const parts = name.split('.');
  const first = parts[0] as string;
  let value: unknown = MISSING;
  for (let i = stack.length - 1; i >= 0; i--) {
    const frame = stack[i];
    if (isJsonObject(frame) && Object.hasOwn(frame, first)) {
      value = frame[first];
      break;
    }
  }
  for (let i = 1; i < parts.length && value !== MISSING; i++) {
    const part = parts[i] as string;
    value = isJsonObject(value) && Object.hasOwn(value, part) ? value[part] : MISSING;
  }
  return value;
}
