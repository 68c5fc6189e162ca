import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { HookFailure } from '../contract.js';

// What a fetched source holds, read from its top directory: a Policyfile (the whole node's cookbooks, resolved by
// `chef install`), a Berksfile (dependencies resolved by `berks vendor`), one cookbook (metadata.rb or
// metadata.json, named by its metadata as Chef names it), and a kitchen's cookbooks/, roles/ and environments/.

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
    try {
      name = (JSON.parse(await readFile(path.join(dir, 'metadata.json'), 'utf8')) as { name?: unknown }).name;
    } catch (err) {
      throw new HookFailure(`${label}: metadata.json is not JSON (${(err as Error).message})`);
    }
  } else {
    const text = await readFile(path.join(dir, 'metadata.rb'), 'utf8');
    name = /^\s*name\s*\(?\s*(['"])([^'"\n]+)\1/m.exec(text)?.[2];
  }
  if (typeof name !== 'string' || name === '')
    throw new HookFailure(`${label}: the cookbook's metadata has no name: add name '<cookbook>' to metadata.rb`);
  if (!/^[\w.-]+$/.test(name) || name.startsWith('.'))
    throw new HookFailure(`${label}: the cookbook name ${JSON.stringify(name)} cannot be a directory name`);
  return name;
}
