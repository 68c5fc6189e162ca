import { lstat, mkdir, readFile, readlink, rename, symlink, lchown, rm } from 'node:fs/promises';
import path from 'node:path';
import { tempPathFor, writeFileAtomic } from '../../util/atomic-write.js';
import { HookFailure } from '../contract.js';
import { accountId } from './accounts.js';
import { download } from './download.js';
import { hostPath } from './host-path.js';
import { SYMLINK_TYPE, type FileEntry } from './model.js';
import { forResource, type InitRun } from './run-state.js';

// files: each written whole and replaced atomically (never written through a link planted in its place), with its
// mode, owner and group; missing parent directories are made (0755, as heat-cfntools' makedirs under umask 022). A
// mode of 120xxx makes a symbolic link to "content", as AWS cfn-init does. A file whose content, mode and owner are
// already right is not rewritten and does not count as changed (services naming it are not restarted).

const NEW_FILE_MODE = 0o644;

export async function applyFiles(run: InitRun, config: string, files: readonly FileEntry[]): Promise<void> {
  for (const file of files) {
    const resource = `config "${config}" files.${file.path}`;
    await forResource(resource, () => applyFile(run, file, resource));
  }
}

async function applyFile(run: InitRun, file: FileEntry, resource: string): Promise<void> {
  const dest = hostPath(run, file.path, resource, 'file');
  await mkdir(path.dirname(dest), { recursive: true, mode: 0o755 });
  const uid = file.owner !== undefined ? await idFor(run, 'passwd', file.owner, resource) : undefined;
  const gid = file.group !== undefined ? await idFor(run, 'group', file.group, resource) : undefined;
  const changed =
    file.mode !== undefined && (file.mode & SYMLINK_TYPE) === SYMLINK_TYPE
      ? await writeLink(dest, (file.content ?? Buffer.alloc(0)).toString('utf8'), uid, gid)
      : await writeRegular(
          dest,
          file.content ?? (await download(run, file.source ?? '', resource)),
          file.mode,
          uid,
          gid,
          resource,
        );
  if (changed) run.changed.add(`file:${file.path}`);
  run.ctx.log.info(changed ? 'file written' : 'file unchanged', { file: file.path });
}

async function idFor(run: InitRun, kind: 'passwd' | 'group', name: string, resource: string): Promise<number> {
  const id = await accountId(run, kind, name);
  if (id === undefined)
    throw new HookFailure(
      `cfn-init: ${resource}: there is no ${kind === 'passwd' ? 'user' : 'group'} named ${JSON.stringify(name)} (create it under "users"/"groups" or fix the name)`,
    );
  return id;
}

async function existing(dest: string) {
  try {
    return await lstat(dest);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function writeRegular(
  dest: string,
  data: Buffer,
  mode: number | undefined,
  uid: number | undefined,
  gid: number | undefined,
  resource: string,
): Promise<boolean> {
  const before = await existing(dest);
  if (before?.isDirectory()) throw new HookFailure(`cfn-init: ${resource}: ${dest} is a directory`);
  const regular = before?.isFile() ? before : undefined;
  // Unset mode and owner keep those of the file being replaced, as writing into it (heat-cfntools) kept them.
  const want = {
    mode: mode !== undefined ? mode & 0o7777 : regular ? regular.mode & 0o7777 : NEW_FILE_MODE,
    uid: uid ?? regular?.uid ?? process.getuid?.() ?? 0,
    gid: gid ?? regular?.gid ?? process.getgid?.() ?? 0,
  };
  if (
    regular &&
    (regular.mode & 0o7777) === want.mode &&
    regular.uid === want.uid &&
    regular.gid === want.gid &&
    regular.size === data.length &&
    (await readFile(dest)).equals(data)
  )
    return false;
  // chown only when the owner differs from the writer's: an unprivileged run (tests, the demo) cannot chown at all.
  const chown =
    want.uid !== process.getuid?.() || want.gid !== process.getgid?.() ? { uid: want.uid, gid: want.gid } : {};
  await writeFileAtomic(dest, data, { mode: want.mode, ...chown, syncDirectory: false });
  return true;
}

async function writeLink(
  dest: string,
  target: string,
  uid: number | undefined,
  gid: number | undefined,
): Promise<boolean> {
  const before = await existing(dest);
  if (
    before?.isSymbolicLink() &&
    (await readlink(dest)) === target &&
    (uid === undefined || before.uid === uid) &&
    (gid === undefined || before.gid === gid)
  )
    return false;
  const tmp = tempPathFor(dest);
  await symlink(target, tmp);
  try {
    if (uid !== undefined || gid !== undefined) await lchown(tmp, uid ?? -1, gid ?? -1);
    await rename(tmp, dest);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return true;
}
