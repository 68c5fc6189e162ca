import { inputValue, type Deployment } from './deployment.js';

// Where a deployment's signal goes. As heat-config-notify, the transport follows from which inputs are present,
// not from deploy_signal_transport: deploy_signal_id -> HTTP to that URL (PUT when deploy_signal_verb is PUT: a Swift
// TempURL; else POST: Heat's pre-signed CFN URL); else deploy_queue_id -> a Zaqar message; else deploy_auth_url ->
// Heat's resource-signal API; else nothing is sent. (Upstream would also send a Zaqar/Heat signal after an HTTP one if
// both kinds of input were present; Heat never generates both, so one transport is used.)

export type Transport = 'CFN_SIGNAL' | 'TEMP_URL_SIGNAL' | 'HEAT_SIGNAL' | 'ZAQAR_SIGNAL' | 'NO_SIGNAL';

export interface KeystoneInputs {
  readonly authUrl: string;
  readonly userId: string;
  readonly password: string;
  readonly projectId: string;
  readonly region?: string;
}

export type SignalTarget =
  | { readonly transport: 'CFN_SIGNAL'; readonly url: string; readonly verb: 'POST' }
  | { readonly transport: 'TEMP_URL_SIGNAL'; readonly url: string; readonly verb: 'PUT' }
  | ({ readonly transport: 'HEAT_SIGNAL'; readonly stackId: string; readonly resourceName: string } & KeystoneInputs)
  | ({ readonly transport: 'ZAQAR_SIGNAL'; readonly queueId: string } & KeystoneInputs)
  | { readonly transport: 'NO_SIGNAL' };

export type TargetChoice = { ok: true; target: SignalTarget } | { ok: false; transport: Transport; reason: string };

export function signalTargetFor(dep: Deployment): TargetChoice {
  const text = (name: string): string | undefined => {
    const v = inputValue(dep, name);
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const signalId = text('deploy_signal_id');
  if (signalId !== undefined) {
    const verb = text('deploy_signal_verb') === 'PUT' ? 'PUT' : 'POST';
    const transport = verb === 'PUT' ? 'TEMP_URL_SIGNAL' : 'CFN_SIGNAL';
    let url: URL;
    try {
      url = new URL(signalId);
    } catch {
      return { ok: false, transport, reason: 'deploy_signal_id is not a URL' };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return {
        ok: false,
        transport,
        reason: `deploy_signal_id uses ${url.protocol} (only http and https are sent to)`,
      };
    return {
      ok: true,
      target:
        verb === 'PUT'
          ? { transport: 'TEMP_URL_SIGNAL', url: signalId, verb }
          : { transport: 'CFN_SIGNAL', url: signalId, verb },
    };
  }
  const queueId = text('deploy_queue_id');
  const authUrl = text('deploy_auth_url');
  if (queueId === undefined && authUrl === undefined) return { ok: true, target: { transport: 'NO_SIGNAL' } };
  const transport = queueId !== undefined ? 'ZAQAR_SIGNAL' : 'HEAT_SIGNAL';
  const needed: Array<[string, string | undefined]> = [
    ['deploy_auth_url', authUrl],
    ['deploy_user_id', text('deploy_user_id')],
    ['deploy_password', text('deploy_password')],
    ['deploy_project_id', text('deploy_project_id')],
  ];
  if (transport === 'HEAT_SIGNAL')
    needed.push(['deploy_stack_id', text('deploy_stack_id')], ['deploy_resource_name', text('deploy_resource_name')]);
  const missing = needed.filter(([, v]) => v === undefined).map(([n]) => n);
  if (missing.length > 0)
    return { ok: false, transport, reason: `${transport} needs the input(s) ${missing.join(', ')}` };
  const unwritable = transport === 'HEAT_SIGNAL' && dotSegmentName(text('deploy_resource_name'));
  if (unwritable) return { ok: false, transport, reason: unwritable };
  const region = text('deploy_region_name');
  const keystone: KeystoneInputs = {
    authUrl: authUrl!,
    userId: text('deploy_user_id')!,
    password: text('deploy_password')!,
    projectId: text('deploy_project_id')!,
    ...(region !== undefined ? { region } : {}),
  };
  if (transport === 'ZAQAR_SIGNAL') return { ok: true, target: { transport, queueId: queueId!, ...keystone } };
  return {
    ok: true,
    target: { transport, stackId: text('deploy_stack_id')!, resourceName: text('deploy_resource_name')!, ...keystone },
  };
}

/** Why a resource named "." or ".." cannot be signalled: a URL's path drops such a segment, even percent-encoded. */
function dotSegmentName(resourceName: string | undefined): string | undefined {
  if (resourceName !== '.' && resourceName !== '..') return undefined;
  return `deploy_resource_name "${resourceName}" cannot be written in a URL path: rename the resource`;
}
