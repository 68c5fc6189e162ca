// Loaded into the agent with `node --import` by the disk-fault tests where no small filesystem can be mounted: while
// the file named by OCA_ENOSPC_FLAG exists, every file opened for writing under OCA_ENOSPC_DIR fails with ENOSPC, as
// on a full disk. The agent's writes go through fs.promises.open (atomic writes, lock files), looked up at call time.
import { existsSync } from 'node:fs';
import { promises as fsp } from 'node:fs';
import path from 'node:path';

const flag = process.env.OCA_ENOSPC_FLAG;
const dir = process.env.OCA_ENOSPC_DIR;
if (flag && dir) {
  const open = fsp.open.bind(fsp);
  fsp.open = (file, flags, ...rest) => {
    const writing = typeof flags === 'string' ? /[wa+]/.test(flags) : typeof flags === 'number' && (flags & 3) !== 0;
    if (writing && existsSync(flag) && path.resolve(String(file)).startsWith(dir + path.sep)) {
      const err = new Error(`ENOSPC: no space left on device, open '${file}'`);
      Object.assign(err, { code: 'ENOSPC', errno: -28, syscall: 'open', path: String(file) });
      return Promise.reject(err);
    }
    return open(file, flags, ...rest);
  };
}
