import { UnsafeNameError } from '../errors.js';

const MAX_NAME_LENGTH = 255;

/**
 * A name from metadata used as one file name (cache key, deployment id): no path separator, no NUL, not "." or
 * "..", no leading dot (hidden files and traversal), at most 255 bytes. Upstream used such names unchecked (B7).
 */
export function checkFileName(kind: string, name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new UnsafeNameError(`${kind} must be a non-empty string`);
  if (
    name.includes('/') ||
    name.includes('\\') ||
    name.includes('\0') ||
    name.startsWith('.') ||
    Buffer.byteLength(name) > MAX_NAME_LENGTH
  ) {
    throw new UnsafeNameError(
      `${kind} ${JSON.stringify(name.slice(0, 80))} cannot be used as a file name (no "/", no leading ".", at most ${MAX_NAME_LENGTH} bytes)`,
    );
  }
  return name;
}

export function isSafeFileName(name: unknown): name is string {
  try {
    checkFileName('name', name);
    return true;
  } catch {
    return false;
  }
}
