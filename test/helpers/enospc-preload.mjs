// Loaded into the agent with `node --import` by the disk-fault tests where no small filesystem can be mounted: while
// the file named by OCA_ENOSPC_FLAG exists, every file opened for writing under OCA_ENOSPC_DIR fails with ENOSPC, as
// on a full disk. The agent's writes go through fs.promises.open or, for small files, fs.openSync (atomic writes,
// lock files), both looked up at call time.
import fs, { existsSync } from 'node:fs';
import path from 'node:path';

const flag = process.env.OCA_ENOSPC_FLAG;
const dir = process.env.OCA_ENOSPC_DIR;

/** The error a full disk gives, when this open would write under the directory while the flag exists. */
function fullDiskError(file, flags) {
  const writing = typeof flags === 'string' ? /[wa+]/.test(flags) : typeof flags === 'number' && (flags & 3) !== 0;
  if (!writing || !existsSync(flag) || !path.resolve(String(file)).startsWith(dir + path.sep)) return undefined;
  const err = new Error(`ENOSPC: no space left on device, open '${file}'`);
  return Object.assign(err, { code: 'ENOSPC', errno: -28, syscall: 'open', path: String(file) });
}

if (flag && dir) {
  const open = fs.promises.open.bind(fs.promises);
  fs.promises.open = (file, flags, ...rest) => {
    const err = fullDiskError(file, flags);
    return err ? Promise.reject(err) : open(file, flags, ...rest);
  };
  const openSync = fs.openSync.bind(fs);
  fs.openSync = (file, flags, ...rest) => {
    const err = fullDiskError(file, flags);
    if (err) throw err;
    return openSync(file, flags, ...rest);
  };
}
