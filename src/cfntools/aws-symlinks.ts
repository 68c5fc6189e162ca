import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors.js';
import type { PathMapper } from '../util/rooted-path.js';

// `cfn-create-aws-symlinks`: links every cfn-* command of the source directory into the target (/opt/aws/bin), where
// templates call them, as heat-cfntools' script does: an existing file is left alone (unless --force), and its lines
// say what was linked. Heat's boot script runs it at every boot of a HEAT_CFNTOOLS server. Beyond heat-cfntools:
// without --source it links a real heat-cfntools' commands (/usr/bin/cfn-*, not ours) when one is installed, else
// ours; a link to one of our commands is pointed at heat-cfntools' once heat-cfntools is installed, so ours never
// stand in front of it; and a link left pointing at nothing (heat-cfntools removed) is made again.

export interface SymlinkOptions {
  readonly paths: PathMapper;
  /** Where the links go (as the instance names it). */
  readonly target: string;
  /** Where the commands are (as the instance names it); undefined: heat-cfntools' when installed, else `ownDir`. */
  readonly source?: string | undefined;
  readonly force: boolean;
  /** Our launchers' directory, as this process reaches it (links made to it point there as they are). */
  readonly ownDir: string;
  readonly say: (line: string) => void;
}

/** heat-cfntools' own directory of commands. */
export const HEAT_CFNTOOLS_DIR = '/usr/bin';

/** 0 when done, 1 when the directories cannot be used (heat-cfntools' exit codes). */
export function createAwsSymlinks(o: SymlinkOptions): number {
  const own = o.source === undefined && !realHeatCfntools(o.paths);
  const source = o.source ?? (own ? o.ownDir : HEAT_CFNTOOLS_DIR);
  const sourceDir = own ? source : o.paths.map(source);
  o.say(`${source} -> ${o.target}`);
  if (path.resolve(source) === path.resolve(o.target)) {
    o.say(`Source and target are the same ${o.target}`);
    return 1;
  }
  const targetDir = o.paths.map(o.target);
  if (!existsSync(targetDir)) {
    try {
      mkdirSync(targetDir, { recursive: true, mode: 0o755 });
    } catch (err) {
      o.say(`Could not create target directory ${o.target}: ${errorMessage(err)}`);
      return 1;
    }
  }
  let names: string[];
  try {
    names = readdirSync(sourceDir)
      .filter((n) => n.startsWith('cfn-'))
      .sort();
  } catch {
    names = [];
  }
  for (const name of names) {
    const from = path.join(source, name);
    const to = path.join(o.target, name);
    const mapped = o.paths.map(to);
    const existing = linkOrFile(mapped);
    if (existing !== undefined) {
      const linked = existing.link === undefined ? undefined : path.resolve(o.target, existing.link);
      const replaceOurs = linked !== undefined && linked !== from && isOurs(inside(o, linked));
      // A link to nothing (its heat-cfntools removed): heat-cfntools' script crashed on it.
      const dangling = linked !== undefined && !existsSync(inside(o, linked));
      if (!o.force && !replaceOurs && !dangling) {
        o.say(`${to} already exists, will not replace with symlink`);
        continue;
      }
      rmSync(mapped, { force: true });
    }
    o.say(`${from} -> ${to}`);
    symlinkSync(from, mapped);
  }
  return 0;
}

/** A link's target as this process reaches it: our own directory as it is, anything else under --root. */
function inside(o: SymlinkOptions, target: string): string {
  return target === o.ownDir || target.startsWith(`${o.ownDir}/`) ? target : o.paths.map(target);
}

/** True when heat-cfntools' cfn-init is installed: /usr/bin/cfn-init exists and is not one of our launchers. */
export function realHeatCfntools(paths: PathMapper): boolean {
  const file = paths.map(path.join(HEAT_CFNTOOLS_DIR, 'cfn-init'));
  return existsSync(file) && !isOurs(file);
}

/** True for a launcher or link of os-config-agent (its text names us; heat-cfntools' scripts do not). */
export function isOurs(file: string): boolean {
  try {
    return readFileSync(file).subarray(0, 4096).toString('utf8').includes('os-config-agent');
  } catch {
    return false;
  }
}

function linkOrFile(file: string): { link?: string } | undefined {
  try {
    const st = lstatSync(file);
    return st.isSymbolicLink() ? { link: readlinkSync(file) } : {};
  } catch {
    return undefined;
  }
}
