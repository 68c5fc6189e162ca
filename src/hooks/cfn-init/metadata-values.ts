// The checks every value of the metadata goes through: the right JSON type, known keys, and heat-cfntools' readings
// of booleans. A failure names where in the metadata the value is.

import { HookFailure } from '../contract.js';
import { ExactNumber } from '../../util/exact-number.js';

export type Json = Record<string, unknown>;
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** heat-cfntools' to_boolean: true, 1 and the strings "true", "yes", "1" (any case, trimmed). */
export function toBoolean(v: unknown): boolean {
  const value = typeof v === 'string' ? v.trim().toLowerCase() : v;
  return value === true || value === 1 || value === 'true' || value === 'yes' || value === '1';
}

export function fail(where: string, problem: string): never {
  throw new HookFailure(`cfn-init: ${where}: ${problem}`);
}

export function objectAt(v: unknown, where: string): Json {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) fail(where, `must be an object, not ${describe(v)}`);
  return v;
}

export function checkKeys(v: Json, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(v)) {
    if (!allowed.includes(key)) fail(where, `unknown key "${key}" (known: ${allowed.join(', ')})`);
  }
}

export function text(v: unknown, where: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || v instanceof ExactNumber) return String(v);
  fail(where, `must be a string, not ${describe(v)}`);
}

export function textList(v: unknown, where: string): string[] {
  if (v === undefined || v === null) return [];
  if (typeof v === 'string') return [v];
  if (!Array.isArray(v)) fail(where, `must be a list of strings, not ${describe(v)}`);
  return v.map((item, i) => text(item, `${where}[${i}]`));
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)}`;
}
