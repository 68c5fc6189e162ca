import { applyCommands } from './commands.js';
import { applyFiles } from './files.js';
import { applyGroups } from './groups.js';
import type { InitConfig } from './model.js';
import { applyPackages } from './packages.js';
import type { InitRun } from './run-state.js';
import { applyServices } from './services.js';
import { applySources } from './sources.js';
import { applyUsers } from './users.js';

// One config after another; within a config heat-cfntools' order: packages, sources, groups, users, files, commands,
// services. The first failure stops the run (it throws HookFailure naming the resource).

export async function runConfigs(run: InitRun, configs: readonly InitConfig[]): Promise<void> {
  for (const config of configs) {
    run.ctx.log.info('applying config', { config: config.name });
    await applyPackages(run, config.name, config.packages);
    await applySources(run, config.name, config.sources);
    await applyGroups(run, config.name, config.groups);
    await applyUsers(run, config.name, config.users);
    await applyFiles(run, config.name, config.files);
    await applyCommands(run, config.name, config.commands);
    await applyServices(run, config.name, config.services);
  }
}
