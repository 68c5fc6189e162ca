import { accountId } from './accounts.js';
import type { GroupEntry } from './model.js';
import { mustRun, type InitRun } from './run-state.js';

// groups: groupadd NAME [--gid GID], as heat-cfntools. A group that already exists is left as it is (heat-cfntools
// logged groupadd's "name not unique" and went on; a second run of the same metadata must not fail).

export async function applyGroups(run: InitRun, config: string, groups: readonly GroupEntry[]): Promise<void> {
  for (const group of groups) {
    const resource = `config "${config}" groups.${group.name}`;
    if ((await accountId(run, 'group', group.name)) !== undefined) {
      run.ctx.log.info('group exists', { group: group.name });
      continue;
    }
    await mustRun(
      run,
      resource,
      { file: 'groupadd', args: [group.name, ...(group.gid !== undefined ? ['--gid', group.gid] : [])] },
      'groupadd was not found: install the passwd package (shadow-utils on RPM systems)',
    );
    run.ctx.log.info('group created', { group: group.name });
  }
}
