import type { ToolRun } from '../contract.js';
import { findExecutable } from '../../util/executable.js';
import type { ServiceEntry } from './model.js';
import { mustRun, tool, type InitRun } from './run-state.js';

// services (sysvinit and systemd alike, as heat-cfntools): "enabled" enables or disables the service at boot,
// "ensureRunning" starts or stops it after a status check. With systemctl on the PATH it does all of it; otherwise
// service(8) starts and stops, and chkconfig or update-rc.d enables. Beyond heat-cfntools (as AWS cfn-init): a
// service that should run is restarted when a file, source, package or command it names changed in this run.

export type ServiceAction = 'enable' | 'disable' | 'start' | 'stop' | 'restart' | 'status';

export interface ServiceTools {
  command(name: string, action: ServiceAction): ToolRun;
}

/** The commands that act on a service here: systemctl, else service(8) with chkconfig or update-rc.d. */
export async function serviceTools(env: NodeJS.ProcessEnv): Promise<ServiceTools> {
  const systemctl = await findExecutable('systemctl', env);
  if (systemctl) return { command: (name, action) => ({ file: systemctl, args: [action, `${name}.service`] }) };
  const service = (await findExecutable('service', env)) ?? 'service';
  const chkconfig = await findExecutable('chkconfig', env);
  return {
    command(name, action) {
      if (action === 'enable' || action === 'disable') {
        return chkconfig
          ? { file: chkconfig, args: [name, action === 'enable' ? 'on' : 'off'] }
          : { file: 'update-rc.d', args: [name, action] };
      }
      return { file: service, args: [name, action] };
    },
  };
}

export async function applyServices(run: InitRun, config: string, services: readonly ServiceEntry[]): Promise<void> {
  if (services.length === 0) return;
  const tools = await serviceTools(run.ctx.env);
  for (const svc of services) {
    const resource = `config "${config}" services.${svc.manager}.${svc.name}`;
    const act = (action: ServiceAction) =>
      mustRun(
        run,
        resource,
        tools.command(svc.name, action),
        `no tool to ${action} services was found (systemctl, or service with chkconfig/update-rc.d)`,
      );
    if (svc.enabled !== undefined) await act(svc.enabled ? 'enable' : 'disable');
    if (svc.ensureRunning === undefined) continue;
    const running = (await tool(run, tools.command(svc.name, 'status'))).status === 0;
    const cause = changedCause(run, svc);
    if (svc.ensureRunning && !running) {
      await act('start');
      run.ctx.log.info('service started', { service: svc.name });
    } else if (svc.ensureRunning && cause) {
      await act('restart');
      run.ctx.log.info('service restarted', { service: svc.name, changed: cause });
    } else if (!svc.ensureRunning && running) {
      await act('stop');
      run.ctx.log.info('service stopped', { service: svc.name });
    }
  }
}

/** The first of the service's files, sources, packages or commands that this run changed. */
function changedCause(run: InitRun, svc: ServiceEntry): string | undefined {
  const watched = [
    ...svc.files.map((f) => `file:${f}`),
    ...svc.sources.map((s) => `source:${s}`),
    ...svc.packages.map((p) => `package:${p}`),
    ...svc.commands.map((c) => `command:${c}`),
  ];
  return watched.find((w) => run.changed.has(w));
}
