import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';

// How the agent knows that an installed hook file is its own build of a built-in hook, so that it may run that hook
// inside itself instead of starting the file. The build writes, as the second line of dist/hooks/<group>:
//
//   // os-config-agent built-in hook group=<group> version=<agent version> sha256=<digest of every byte after this line>
//
// A file is recognised only when that line names the group being deployed and this agent's version, and the digest
// matches the rest of the file: a hook the user edited, replaced or took from another release runs as a process.

const STAMP = /^#![^\n]*\n\/\/ os-config-agent built-in hook group=([\w-]+) version=(\S+) sha256=([0-9a-f]{64})\n/;
/** A built-in hook is well below this; a larger file is not read whole just to be told it is someone else's. */
const MAX_HOOK_BYTES = 8 * 1024 * 1024;

export interface HookStamp {
  readonly group: string;
  readonly version: string;
}

/** The stamp line for a hook body (the build's side of the contract). */
export function stampLine(group: string, version: string, body: string): string {
  return `// os-config-agent built-in hook group=${group} version=${version} sha256=${sha256(body)}\n`;
}

/**
 * The stamp of an intact built-in hook file, or undefined for any other file (or one that cannot be read). Read
 * directly, not through the thread pool: it is asked before every deployment a built-in hook runs, and the hook is
 * a local file of some 50 KB (docs/performance.md).
 */
export function readHookStamp(file: string): HookStamp | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    if (fstatSync(fd).size > MAX_HOOK_BYTES) return undefined;
    const text = readFileSync(fd, 'utf8');
    const match = STAMP.exec(text);
    if (!match) return undefined;
    if (sha256(text.slice(match[0].length)) !== match[3]) return undefined;
    return { group: match[1]!, version: match[2]! };
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
