import path from 'node:path';
import { isJsonObject } from '../../util/json-merge.js';
import { checkName, resolveWriteTarget, TargetRefused } from '../../util/write-target.js';
import { replaceDataFiles, pythonJson, type DataFile } from '../kit/data-files.js';
import { HookFailure, type BuiltinHook } from '../contract.js';
import type { HookDeclaration } from '../declaration.js';
import { hookRoot, underRoot } from '../hook-paths.js';
import { result } from '../hook-result.js';

// Group "json-file": the config maps absolute file paths to data; each file gets its data as JSON (4-space indent,
// sorted keys, as upstream). Upstream: heat-agents' hook-json-file.py. Every name is checked before any file is
// written (util/write-target.ts: through no link another user owns, never outside the root, where upstream followed
// any link), and the files are replaced together (data-files.ts), so a bad name or a failed write changes nothing.

/** New files are private: the data often holds passwords. An existing file keeps its mode and owner, as upstream. */
const NEW_FILE_MODE = 0o600;

/** It writes files and drives no program. */
export const declaration: HookDeclaration = { group: 'json-file' };

export const hook: BuiltinHook = {
  group: declaration.group,
  acceptsNoId: true,

  // The files belong to the services that read them: they stay when the deployment goes, as upstream.
  workFiles: () => [],

  async run(deployment, ctx) {
    const { config } = deployment;
    if (!isJsonObject(config)) {
      throw new HookFailure(
        `the json-file config must be an object mapping absolute file paths to their data, not ${describe(config)}`,
      );
    }
    const refused: string[] = [];
    const targets = new Map<string, { name: string; data: unknown }>();
    for (const [name, data] of Object.entries(config)) {
      try {
        checkName(name);
        const file = underRoot(ctx.env, path.normalize(name));
        const same = targets.get(file);
        if (same) throw new TargetRefused(`names the same file as ${JSON.stringify(same.name)}`);
        targets.set(file, { name, data });
      } catch (err) {
        if (!(err instanceof TargetRefused)) throw err;
        refused.push(`${JSON.stringify(name)}: ${err.message}`);
      }
    }
    const files: DataFile[] = [];
    const seen = new Map<string, string>();
    const asRoot = process.getuid?.() === 0;
    const root = hookRoot(ctx.env);
    for (const [file, { name, data }] of targets) {
      try {
        const target = resolveWriteTarget(file, { root });
        const other = seen.get(target.file);
        if (other !== undefined) throw new TargetRefused(`leads to ${target.file}, as ${JSON.stringify(other)} does`);
        seen.set(target.file, name);
        const { existing } = target;
        files.push({
          file: target.file,
          content: pythonJson(data, { indent: 4, sortKeys: true }),
          mode: existing ? existing.mode & 0o7777 : NEW_FILE_MODE,
          ...(existing && asRoot ? { uid: existing.uid, gid: existing.gid } : {}),
        });
      } catch (err) {
        if (!(err instanceof TargetRefused)) throw err;
        refused.push(`${JSON.stringify(name)}: ${err.message}`);
      }
    }
    if (refused.length > 0) {
      throw new HookFailure(
        `the json-file config names files that are not written (nothing was written): ${refused.join('; ')}`,
      );
    }
    await replaceDataFiles(files, root);
    for (const { file } of files) ctx.log.info('file written', { file });
    return result({ status: 0 });
  },
};

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return `a ${typeof value}`;
}
