import { lstatSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { WriteBatch, type StageOptions } from '../../util/write-batch.js';
import { HookFailure } from '../contract.js';
import { accountId } from './accounts.js';
import { downloadToFile } from './download.js';
import { hostPath } from './host-path.js';
import { SYMLINK_TYPE, type FileEntry } from './model.js';
import { forResource, type InitRun } from './run-state.js';

// files: each written whole and replaced atomically (never written through a link planted in its place), with its
// mode, owner and group; missing parent directories are made (0777 less the umask, as heat-cfntools' os.makedirs). A
// mode of 120xxx makes a symbolic link to "content", as AWS cfn-init does. A file whose content, mode and owner are
// already right is not rewritten and does not count as changed (services naming it are not restarted).
//
// A config's files are replaced as one step (util/write-batch.ts): every new body is written beside its target first,
// made durable once for all of them (one syncfs for a large set instead of an fsync per file, each a journal commit on
// an instance's disk), then renamed into place. A failure part-way (an unknown owner, a failed download, a full disk)
// leaves every file of the config as it was; heat-cfntools left those before the failing one written.

const NEW_FILE_MODE = 0o644;
/** Bytes read at a time when a downloaded source is compared with the file in place. */
const COMPARE_BLOCK = 1024 * 1024;

export async function applyFiles(run: InitRun, config: string, files: readonly FileEntry[]): Promise<void> {
  const batch = new WriteBatch();
  const changed: boolean[] = [];
  try {
    for (const file of files) {
      const resource = `config "${config}" files.${file.path}`;
      changed.push(await forResource(resource, () => stageFile(run, batch, file, resource)));
    }
    await forResource(`config "${config}" files`, () => batch.commit());
  } catch (err) {
    batch.abort();
    throw err;
  }
  files.forEach((file, i) => {
    if (changed[i]) run.changed.add(`file:${file.path}`);
    run.ctx.log.info(changed[i] ? 'file written' : 'file unchanged', { file: file.path });
  });
}

/** Stages one file or link in the batch; false when it is already as asked (nothing staged). */
async function stageFile(run: InitRun, batch: WriteBatch, file: FileEntry, resource: string): Promise<boolean> {
  const dest = hostPath(run, file.path, resource, 'file');
  const uid = file.owner !== undefined ? await idFor(run, 'passwd', file.owner, resource) : undefined;
  const gid = file.group !== undefined ? await idFor(run, 'group', file.group, resource) : undefined;
  if (file.mode !== undefined && (file.mode & SYMLINK_TYPE) === SYMLINK_TYPE) {
    const target = (file.content ?? Buffer.alloc(0)).toString('utf8');
    if (linkIsAsAsked(dest, target, uid, gid)) return false;
    batch.ensureDirectory(path.dirname(dest));
    batch.stageLink(dest, target, { uid, gid });
    return true;
  }
  const plan = regularPlan(dest, file.mode, uid, gid, resource);
  batch.ensureDirectory(path.dirname(dest));
  if (file.content !== undefined) {
    if (plan.keeps(file.content.length) && readFileSync(dest).equals(file.content)) return false;
    batch.stage(dest, file.content, plan.options);
    return true;
  }
  // A source is downloaded beside the file, never into memory (the hook runs inside the daemon), then compared.
  const temp = await batch.stageFrom(dest, (to) => downloadToFile(run, file.source ?? '', resource, to), plan.options);
  if (plan.keeps(statSync(temp).size) && (await sameBytes(temp, dest))) {
    batch.unstage(dest);
    return false;
  }
  return true;
}

async function idFor(run: InitRun, kind: 'passwd' | 'group', name: string, resource: string): Promise<number> {
  const id = await accountId(run, kind, name);
  if (id === undefined)
    throw new HookFailure(
      `cfn-init: ${resource}: there is no ${kind === 'passwd' ? 'user' : 'group'} named ${JSON.stringify(name)} (create it under "users"/"groups" or fix the name)`,
    );
  return id;
}

function existing(dest: string) {
  return lstatSync(dest, { throwIfNoEntry: false });
}

/** How a regular file at `dest` is to be staged, and whether one already there with `size` bytes may be as asked. */
function regularPlan(
  dest: string,
  mode: number | undefined,
  uid: number | undefined,
  gid: number | undefined,
  resource: string,
): { options: StageOptions; keeps: (size: number) => boolean } {
  const before = existing(dest);
  if (before?.isDirectory()) throw new HookFailure(`cfn-init: ${resource}: ${dest} is a directory`);
  const regular = before?.isFile() ? before : undefined;
  // Unset mode and owner keep those of the file being replaced, as writing into it (heat-cfntools) kept them.
  const want = {
    mode: mode !== undefined ? mode & 0o7777 : regular ? regular.mode & 0o7777 : NEW_FILE_MODE,
    uid: uid ?? regular?.uid ?? process.getuid?.() ?? 0,
    gid: gid ?? regular?.gid ?? process.getgid?.() ?? 0,
  };
  // chown only when the owner differs from the writer's: an unprivileged run (tests, the demo) cannot chown at all.
  const chown =
    want.uid !== process.getuid?.() || want.gid !== process.getgid?.() ? { uid: want.uid, gid: want.gid } : {};
  return {
    options: { mode: want.mode, ...chown },
    keeps: (size) =>
      regular !== undefined &&
      (regular.mode & 0o7777) === want.mode &&
      regular.uid === want.uid &&
      regular.gid === want.gid &&
      regular.size === size,
  };
}

/** Whether two regular files hold the same bytes, read a block at a time (a source may be large). */
async function sameBytes(a: string, b: string): Promise<boolean> {
  const [one, two] = await Promise.all([open(a, 'r'), open(b, 'r')]);
  try {
    const left = Buffer.alloc(COMPARE_BLOCK);
    const right = Buffer.alloc(COMPARE_BLOCK);
    for (;;) {
      const [x, y] = await Promise.all([one.read(left, 0, COMPARE_BLOCK), two.read(right, 0, COMPARE_BLOCK)]);
      if (x.bytesRead !== y.bytesRead || !left.subarray(0, x.bytesRead).equals(right.subarray(0, y.bytesRead)))
        return false;
      if (x.bytesRead === 0) return true;
    }
  } finally {
    await Promise.all([one.close(), two.close()]);
  }
}

function linkIsAsAsked(dest: string, target: string, uid: number | undefined, gid: number | undefined): boolean {
  const before = existing(dest);
  return (
    before?.isSymbolicLink() === true &&
    readlinkSync(dest) === target &&
    (uid === undefined || before.uid === uid) &&
    (gid === undefined || before.gid === gid)
  );
}
