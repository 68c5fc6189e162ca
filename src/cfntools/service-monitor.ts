import { errorMessage } from '../errors.js';
import type { HookContext } from '../hooks/contract.js';
import { selectConfigs } from '../hooks/cfn-init/configsets.js';
import { isObject, toBoolean } from '../hooks/cfn-init/metadata-values.js';
import { serviceTools } from '../hooks/cfn-init/services.js';

// cfn-hup's watch over the services AWS::CloudFormation::Init wants running: each one with ensureRunning true in the
// configs cfn-init would run (the default configSet, or "config") whose status says it is not running is started
// again, and named in the result, so cfn-hup fires its service.restarted hooks (as heat-cfntools does, whether or
// not the start worked). heat-cfntools looked at the "config" config only.

export async function restartDeadServices(init: unknown, ctx: HookContext): Promise<string[]> {
  const wanted = ensureRunning(init, ctx);
  if (wanted.length === 0) return [];
  const tools = await serviceTools(ctx.env);
  const restarted: string[] = [];
  for (const name of wanted) {
    const run = (action: 'status' | 'start') => ctx.spawn({ ...tools.command(name, action), env: ctx.env });
    if ((await run('status')).exitCode === 0) continue;
    ctx.log.warn('service not running; starting it', { service: name });
    const start = await run('start');
    if (start.exitCode !== 0)
      ctx.log.error('service did not start', {
        service: name,
        reason: start.spawnError?.message ?? start.stderr.trim().split('\n').slice(-3).join(' '),
      });
    restarted.push(name);
  }
  return restarted;
}

/** Names of the services with ensureRunning true, each once. */
function ensureRunning(init: unknown, ctx: HookContext): string[] {
  if (!isObject(init)) return [];
  let configs: string[];
  try {
    configs = selectConfigs(init);
  } catch (err) {
    ctx.log.warn('services not watched: the configSets cannot be read', { reason: errorMessage(err) });
    return [];
  }
  const names = new Set<string>();
  for (const config of configs) {
    const services = isObject(init[config]) ? (init[config] as Record<string, unknown>).services : undefined;
    if (!isObject(services)) continue;
    for (const [manager, entries] of Object.entries(services)) {
      if ((manager !== 'sysvinit' && manager !== 'systemd') || !isObject(entries)) continue;
      for (const [name, props] of Object.entries(entries))
        if (isObject(props) && toBoolean(props.ensureRunning)) names.add(name);
    }
  }
  return [...names];
}
