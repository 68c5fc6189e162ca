import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { readCappedFile } from '../../util/read-json-file.js';
import { HookFailure } from '../contract.js';

// What a fetched source holds, read from its top directory: a Policyfile (the whole node's cookbooks, resolved by
// `chef install`), a Berksfile (dependencies resolved by `berks vendor`), one cookbook (metadata.rb or
// metadata.json, named by its metadata as Chef names it), and a kitchen's cookbooks/, roles/ and environments/.

/** Far above any cookbook's metadata file, which is a few KB. */
const METADATA_MAX_BYTES = 1024 * 1024;

export interface SourceLayout {
  readonly dir: string;
  readonly policyfile: boolean;
  readonly berksfile: boolean;
  /** The name of the cookbook the source is, when it is one. */
  readonly cookbook?: string;
  /** The source has a cookbooks/ directory (a kitchen). */
  readonly cookbooks: boolean;
}

export async function readLayout(dir: string, label: string): Promise<SourceLayout> {
  const names = new Set(await readdir(dir));
  const cookbook =
    names.has('metadata.json') || names.has('metadata.rb') ? await cookbookName(dir, names, label) : undefined;
  return {
    dir,
    policyfile: names.has('Policyfile.rb'),
    berksfile: names.has('Berksfile'),
    ...(cookbook ? { cookbook } : {}),
    cookbooks: names.has('cookbooks'),
  };
}

/** The cookbook's name: metadata.json's "name", else metadata.rb's `name '…'` (Chef prefers the JSON too). */
async function cookbookName(dir: string, names: Set<string>, label: string): Promise<string> {
  let name: unknown;
  if (names.has('metadata.json')) {
    const text = await metadataText(dir, 'metadata.json', label);
    try {
      name = (JSON.parse(text) as { name?: unknown }).name;
    } catch (err) {
      throw new HookFailure(`${label}: metadata.json is not JSON (${(err as Error).message})`);
    }
  } else {
    const text = await metadataText(dir, 'metadata.rb', label);
    name = /^\s*name\s*\(?\s*(['"])([^'"\n]+)\1/m.exec(text)?.[2];
  }
  if (typeof name !== 'string' || name === '')
    throw new HookFailure(`${label}: the cookbook's metadata has no name: add name '<cookbook>' to metadata.rb`);
  if (!/^[\w.-]+$/.test(name) || name.startsWith('.'))
    throw new HookFailure(`${label}: the cookbook name ${JSON.stringify(name)} cannot be a directory name`);
  return name;
}

/**
 * A cookbook's metadata file, which comes from a downloaded archive or repository: read only when it is a regular
 * file of reasonable size. A link there to a device such as /dev/zero, or a FIFO (tar makes both), would otherwise
 * fill the agent's memory or hold the run forever.
 */
async function metadataText(dir: string, file: string, label: string): Promise<string> {
  const read = await readCappedFile(path.join(dir, file), METADATA_MAX_BYTES);
  if (!read.ok) throw new HookFailure(`${label}: the cookbook's ${file} cannot be read: ${read.detail}`);
  return read.bytes.toString('utf8');
}
