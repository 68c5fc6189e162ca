import { accountId } from './accounts.js';
import type { UserEntry } from './model.js';
import { mustRun, type InitRun } from './run-state.js';

// users: useradd NAME [--uid] [--home] [--groups a,b] --shell /sbin/nologin, as heat-cfntools (its users are
// non-interactive by design). A user that already exists is left as it is.

export async function applyUsers(run: InitRun, config: string, users: readonly UserEntry[]): Promise<void> {
  for (const user of users) {
    const resource = `config "${config}" users.${user.name}`;
    if ((await accountId(run, 'passwd', user.name)) !== undefined) {
      run.ctx.log.info('user exists', { user: user.name });
      continue;
    }
    const args = [user.name];
    if (user.uid !== undefined) args.push('--uid', user.uid);
    if (user.homeDir !== undefined) args.push('--home', user.homeDir);
    if (user.groups.length > 0) args.push('--groups', user.groups.join(','));
    args.push('--shell', '/sbin/nologin');
    await mustRun(
      run,
      resource,
      { file: 'useradd', args },
      'useradd was not found: install the passwd package (shadow-utils on RPM systems)',
    );
    run.ctx.log.info('user created', { user: user.name });
  }
}
