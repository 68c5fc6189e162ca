import type { AgentConfig } from '../config/options.js';
import { SourceNotConfiguredError, SourceUnavailableError } from '../errors.js';
import type { HttpResponse } from '../http/types.js';
import {
  collectorSessionOptions,
  rememberedSession,
  type KeystoneMemory,
  type KeystoneSession,
} from '../keystone/keystone-client.js';
import type { CollectContext } from './types.js';

// What the two sources that log in to Keystone (heat and zaqar) share: the options they need, in upstream's order of
// checks; their Keystone session, kept across polls in the collector's memory; and a request made with its token
// that logs in again once when the service refuses the token, and names the section to fix when it refuses again.

export type KeystoneSource = 'heat' | 'zaqar';

const SERVICE: Record<KeystoneSource, string> = { heat: 'Heat', zaqar: 'Zaqar' };
const TOKEN_REFUSED: Record<KeystoneSource, string> = {
  heat: 'Heat refused the cached token; authenticating again',
  zaqar: 'Zaqar refused the cached token; authenticating again',
};

/** The options a source needs before it can log in and poll, in upstream's order of checks. */
export function requiredOptions(config: AgentConfig, source: KeystoneSource): Array<[string, string | undefined]> {
  const cfg = config[source];
  const login: Array<[string, string | undefined]> = [
    ['auth_url', cfg.auth_url],
    ['password', cfg.password],
    ['project_id', cfg.project_id],
    ['user_id', cfg.user_id],
  ];
  return source === 'heat'
    ? [...login, ['stack_id', config.heat.stack_id], ['resource_name', config.heat.resource_name]]
    : [...login, ['queue_id', config.zaqar.queue_id]];
}

/** Throws SourceNotConfiguredError naming the first option the source lacks. */
export function checkConfigured(config: AgentConfig, source: KeystoneSource): void {
  for (const [name, value] of requiredOptions(config, source))
    if (!value) throw new SourceNotConfiguredError(source, `no [${source}] ${name}`);
}

/** The source's Keystone session, kept in its memory across polls (checkConfigured first). */
export function sourceSession(ctx: CollectContext<KeystoneMemory>, source: KeystoneSource): KeystoneSession {
  const cfg = ctx.config[source];
  return rememberedSession(
    ctx.memory,
    ctx.http,
    { authUrl: cfg.auth_url!, userId: cfg.user_id!, password: cfg.password!, projectId: cfg.project_id! },
    { timeoutSeconds: cfg.timeout, now: ctx.now, ...collectorSessionOptions(ctx.config, ctx.log) },
  );
}

/**
 * `send` (a request with the session's token); when the service refuses the token (expired or revoked early), the
 * session logs in again and `send` goes once more. A second refusal makes the source unavailable.
 */
export async function withToken(
  ctx: CollectContext,
  source: KeystoneSource,
  session: KeystoneSession,
  send: () => Promise<HttpResponse>,
): Promise<HttpResponse> {
  let res = await send();
  if (res.statusCode === 401) {
    ctx.log.info(TOKEN_REFUSED[source]);
    session.invalidate();
    res = await send();
  }
  if (res.statusCode === 401 || res.statusCode === 403) {
    throw new SourceUnavailableError(
      source,
      `${SERVICE[source]} at ${res.redactedUrl} refused access (${res.statusCode}); check the [${source}] credentials`,
      { code: 'ERR_HTTP', statusCode: res.statusCode },
    );
  }
  return res;
}
