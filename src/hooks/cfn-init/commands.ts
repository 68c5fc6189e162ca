import { access } from 'node:fs/promises';
import os from 'node:os';
import { HookFailure, type ToolRun } from '../contract.js';
import { hostPath } from './host-path.js';
import type { CommandEntry } from './model.js';
import { tool, type InitRun } from './run-state.js';

// commands: in name order; a string runs through /bin/sh -c, a list directly. "test" runs first (same cwd and env)
// and a non-zero status skips the command. "env", when given, is the whole environment, as heat-cfntools passed it.
// A failure stops the run unless "ignoreErrors" is true. What they print becomes the deployment's stdout/stderr.

export async function applyCommands(run: InitRun, config: string, commands: readonly CommandEntry[]): Promise<void> {
  for (const cmd of commands) {
    const resource = `config "${config}" commands.${cmd.name}`;
    const env = cmd.env ? { ...cmd.env } : run.ctx.env;
    let cwd: string | undefined;
    if (cmd.cwd !== undefined) {
      const expanded =
        cmd.cwd === '~' || cmd.cwd.startsWith('~/')
          ? `${run.ctx.env.HOME ?? os.homedir()}${cmd.cwd.slice(1)}`
          : cmd.cwd;
      if (!expanded.startsWith('/'))
        throw new HookFailure(`cfn-init: ${resource}: cwd ${JSON.stringify(cmd.cwd)} is not an absolute path`);
      cwd = hostPath(run, expanded, resource, 'directory');
      try {
        await access(cwd);
      } catch {
        if (cmd.ignoreErrors) {
          run.ctx.log.warn('command skipped: its cwd does not exist', { command: cmd.name, cwd: cmd.cwd });
          continue;
        }
        throw new HookFailure(`cfn-init: ${resource}: its cwd ${cmd.cwd} does not exist`);
      }
    }
    const where = { env, ...(cwd !== undefined ? { cwd } : {}) };
    if (cmd.test !== undefined) {
      const test = await tool(run, { file: '/bin/sh', args: ['-c', cmd.test], ...where });
      if (test.status !== 0) {
        run.ctx.log.info('command skipped: its test returned false', { command: cmd.name, exitCode: test.status });
        continue;
      }
    }
    const spec: ToolRun =
      typeof cmd.command === 'string'
        ? { file: '/bin/sh', args: ['-c', cmd.command], ...where }
        : { file: cmd.command[0] ?? '', args: cmd.command.slice(1), ...where };
    run.ctx.log.info('running command', { command: cmd.name });
    const res = await tool(run, spec);
    run.stdout.push(res.stdout);
    run.stderr.push(res.stderr);
    run.changed.add(`command:${cmd.name}`);
    if (res.status === 0) {
      run.ctx.log.info('command succeeded', { command: cmd.name });
    } else if (cmd.ignoreErrors) {
      run.ctx.log.warn('command failed; ignoreErrors is set', { command: cmd.name, exitCode: res.status });
    } else {
      run.ctx.log.error('command failed', { command: cmd.name, exitCode: res.status });
      throw new HookFailure(
        `cfn-init: ${resource} failed with status ${res.status}; the commands after it and the services were not run`,
      );
    }
  }
}
