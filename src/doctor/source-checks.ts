import { randomUUID } from 'node:crypto';
import { cfnCollector } from '../collectors/cfn.js';
import { heatCollector } from '../collectors/heat.js';
import { requiredOptions } from '../collectors/keystone-source.js';
import { configuredUrls } from '../collectors/metadata-urls.js';
import { requestCollector } from '../collectors/request.js';
import type { Collector, CollectorName } from '../collectors/types.js';
import type { LoadedConfig } from '../config/load.js';
import type { AgentConfig } from '../config/options.js';
import { errorMessage, SourceNotConfiguredError, SourceUnavailableError } from '../errors.js';
import { HttpError } from '../http/http-error.js';
import type { HttpClient } from '../http/types.js';
import { findEndpoint, KeystoneError, KeystoneSession, type KeystoneToken } from '../keystone/keystone-client.js';
import type { Logger } from '../log/logger.js';
import { redactUrl } from '../log/redact.js';
import { fail, ok, skipped, warn, type CheckResult } from './check.js';
import { withDeadline } from './deadline.js';

// The network sources: each configured endpoint reached through the agent's HTTP client (so through the proxy
// settings in force), and its credentials tried for real. heat and zaqar get a Keystone token of their own (a cached
// token would prove nothing about the password); heat's metadata, cfn's signed DescribeStackResource and the request
// URL are fetched by the collectors themselves, with empty memory. Nothing is changed anywhere: zaqar's queue is
// only asked for its stats (the collector's pop would consume a message), ec2 only for its root listing.

export interface SourceCheckContext {
  readonly loaded: LoadedConfig;
  readonly http: HttpClient;
  readonly log: Logger;
  readonly timeoutMs: number;
}

const NETWORK_SOURCES: readonly CollectorName[] = ['ec2', 'cfn', 'heat', 'request', 'zaqar'];
const UNREACHABLE_FIX =
  'check that the endpoint is up and reachable from this server, directly or through the proxy in force (http_proxy, https_proxy, no_proxy)';

export function sourceChecks(ctx: SourceCheckContext): Array<Promise<CheckResult>> {
  const enabled = new Set(ctx.loaded.config.DEFAULT.collectors);
  const out: Array<Promise<CheckResult>> = [];
  for (const name of NETWORK_SOURCES) {
    if (!enabled.has(name)) {
      out.push(Promise.resolve(skipped(`source.${name}`, `${name} is not in [DEFAULT] collectors`)));
      continue;
    }
    if (name === 'ec2') out.push(ec2Check(ctx));
    else if (name === 'heat' || name === 'zaqar') out.push(...keystoneChecks(ctx, name));
    else if (name === 'cfn')
      out.push(
        collectorCheck(
          ctx,
          cfnCollector,
          'heat-api-cfn',
          '[cfn] access_key_id and secret_access_key (and the clock: see the clock check)',
        ),
      );
    else
      out.push(
        collectorCheck(
          ctx,
          requestCollector,
          '[request] metadata_url',
          '[request] metadata_url: a TempURL expires, or changes with its key',
        ),
      );
  }
  return out;
}

/**
 * The config with every request timeout no longer than the doctor's own, and no Keystone token cache: the heat check
 * must log in with the password (a cached token proves nothing about it), and doctor writes no token to disk.
 */
function boundedConfig(config: AgentConfig, seconds: number): AgentConfig {
  const cap = (t: number) => Math.min(t > 0 ? t : seconds, seconds);
  return {
    ...config,
    keystone: { ...config.keystone, cache_dir: undefined },
    ec2: { ...config.ec2, timeout: cap(config.ec2.timeout) },
    cfn: { ...config.cfn, timeout: cap(config.cfn.timeout) },
    heat: { ...config.heat, timeout: cap(config.heat.timeout) },
    request: { ...config.request, timeout: cap(config.request.timeout) },
    zaqar: { ...config.zaqar, timeout: cap(config.zaqar.timeout) },
  };
}

/** Which fix a source's failure calls for: its credentials when the server (or Keystone) refused them, else the network path. */
function fixFor(err: unknown, credentials: string): string {
  const status = err instanceof SourceUnavailableError ? err.statusCode : undefined;
  return status === 401 || status === 403 ? `check ${credentials}` : UNREACHABLE_FIX;
}

function collectorCheck(
  ctx: SourceCheckContext,
  collector: Collector,
  what: string,
  credentials: string,
): Promise<CheckResult> {
  const id = `source.${collector.name}`;
  const config = boundedConfig(ctx.loaded.config, ctx.timeoutMs / 1000);
  return withDeadline(id, ctx.timeoutMs, what, async (signal) => {
    try {
      const result = await collector.collect({
        config,
        paths: ctx.loaded.paths,
        log: ctx.log.child({ collector: collector.name }),
        http: ctx.http,
        signal,
        memory: {},
        now: Date.now,
      });
      const answered =
        collector.name === 'cfn'
          ? 'heat-api-cfn accepted the signed request'
          : collector.name === 'heat'
            ? "Heat returned the server's metadata"
            : 'the metadata URL answered';
      return ok(id, `${answered}; ${result.pairs.length} metadata entr${result.pairs.length === 1 ? 'y' : 'ies'}`);
    } catch (err) {
      if (err instanceof SourceNotConfiguredError) return skipped(id, `not configured: ${err.message}`);
      const message = errorMessage(err);
      return fail(id, message, fixFor(err, credentials));
    }
  });
}

/** The EC2-style metadata service: each configured URL's listing, asked at once; any answer shows the way is open. */
function ec2Check(ctx: SourceCheckContext): Promise<CheckResult> {
  const id = 'source.ec2';
  const { urls, invalid } = configuredUrls(ctx.loaded.config);
  if (urls.length === 0) {
    return Promise.resolve(
      skipped(
        id,
        invalid.length > 0
          ? `no usable metadata URL (${invalid.join('; ')})`
          : 'no metadata service URL configured ([ec2] metadata_url is empty)',
      ),
    );
  }
  const seconds = Math.min(ctx.loaded.config.ec2.timeout || ctx.timeoutMs / 1000, ctx.timeoutMs / 1000);
  return withDeadline(id, ctx.timeoutMs, 'the metadata service', async (signal) => {
    // The first URL that answers settles it; the others (a link-local address may hang) are abandoned at once.
    const answers: Array<{ ok: boolean; text: string }> = [];
    const probe = async (base: string): Promise<{ ok: boolean; text: string }> => {
      const shown = redactUrl(base);
      try {
        // IMDSv2-only services answer 401 without a session token: that still shows the service is there.
        const res = await ctx.http.request({ url: `${base}/`, timeoutSeconds: seconds, retries: 0, signal });
        return { ok: res.statusCode < 300 || res.statusCode === 401, text: `${shown} answered ${res.statusCode}` };
      } catch (err) {
        return { ok: false, text: err instanceof HttpError ? err.message : `${shown}: ${errorMessage(err)}` };
      }
    };
    const good = await new Promise<{ ok: boolean; text: string } | undefined>((resolve) => {
      for (const base of urls) {
        void probe(base).then((a) => {
          answers.push(a);
          if (a.ok) resolve(a);
          else if (answers.length === urls.length) resolve(undefined);
        });
      }
    });
    if (good) return ok(id, good.text);
    return fail(
      id,
      answers.map((a) => a.text).join('; '),
      ctx.loaded.config.ec2.metadata_url === undefined
        ? `${UNREACHABLE_FIX}; on a cloud without a metadata service set [ec2] metadata_url empty`
        : UNREACHABLE_FIX,
    );
  });
}

/** heat and zaqar: `credentials.<name>` (a fresh Keystone token), then `source.<name>` with that token. */
function keystoneChecks(ctx: SourceCheckContext, name: 'heat' | 'zaqar'): Array<Promise<CheckResult>> {
  const cfg = name === 'heat' ? ctx.loaded.config.heat : ctx.loaded.config.zaqar;
  const required = requiredOptions(ctx.loaded.config, name);
  const missing = required.find(([, v]) => !v);
  if (missing) {
    const why = `not configured: no [${name}] ${missing[0]}`;
    return [Promise.resolve(skipped(`credentials.${name}`, why)), Promise.resolve(skipped(`source.${name}`, why))];
  }
  const seconds = Math.min(cfg.timeout || ctx.timeoutMs / 1000, ctx.timeoutMs / 1000);
  const session = new KeystoneSession(
    ctx.http,
    { authUrl: cfg.auth_url!, userId: cfg.user_id!, password: cfg.password!, projectId: cfg.project_id! },
    { timeoutSeconds: seconds, log: ctx.log.child({ component: 'keystone' }) },
  );
  let token: KeystoneToken | undefined;
  const credentials = withDeadline(
    `credentials.${name}`,
    ctx.timeoutMs,
    `Keystone at ${redactUrl(cfg.auth_url!)}`,
    async (signal) => {
      try {
        token = await session.token(signal);
      } catch (err) {
        // Keystone's message ends with its own advice; the fix line gives it once, naming the section.
        const message = errorMessage(err).replace(/; check [^;]*$/, '');
        const refused = err instanceof KeystoneError && (err.statusCode === 401 || err.statusCode === 403);
        return fail(
          `credentials.${name}`,
          message,
          refused ? `check [${name}] user_id, password and project_id` : `${UNREACHABLE_FIX}; check [${name}] auth_url`,
        );
      }
      return ok(
        `credentials.${name}`,
        `Keystone at ${redactUrl(cfg.auth_url!)} issued a token for user ${cfg.user_id} in project ${cfg.project_id}`,
      );
    },
  );
  const source = credentials.then((verdict) => {
    if (verdict.verdict !== 'ok' || !token)
      return skipped(`source.${name}`, `needs a Keystone token (see credentials.${name})`);
    const got = token;
    return name === 'heat'
      ? collectorCheck(
          ctx,
          heatCollector,
          'Heat',
          `that [heat] user_id may read stack ${ctx.loaded.config.heat.stack_id}`,
        )
      : zaqarStats(ctx, got, seconds);
  });
  return [credentials, source];
}

/** Zaqar's queue stats: read-only, unlike the collector's pop. */
function zaqarStats(ctx: SourceCheckContext, token: KeystoneToken, seconds: number): Promise<CheckResult> {
  const id = 'source.zaqar';
  const cfg = ctx.loaded.config.zaqar;
  return withDeadline(id, ctx.timeoutMs, 'Zaqar', async (signal) => {
    let endpoint: string;
    try {
      endpoint = findEndpoint(token.catalog, 'messaging', cfg.region_name);
    } catch (err) {
      return fail(id, errorMessage(err), 'check [zaqar] region_name, and that Zaqar is registered in Keystone');
    }
    const url = `${endpoint}/v2/queues/${encodeURIComponent(cfg.queue_id!)}/stats`;
    try {
      const res = await ctx.http.request({
        url,
        headers: {
          'x-auth-token': token.token,
          'x-project-id': cfg.project_id!,
          'client-id': randomUUID(),
          accept: 'application/json',
        },
        timeoutSeconds: seconds,
        retries: 0,
        signal,
        ...(cfg.ssl_certificate_validation && cfg.ca_file ? { caFile: cfg.ca_file } : { insecure: true }),
      });
      const shown = redactUrl(url);
      if (res.statusCode >= 200 && res.statusCode < 300)
        return ok(
          id,
          `Zaqar answered for queue ${cfg.queue_id}${cfg.use_websockets ? ' (over HTTP; the websocket API was not tried)' : ''}`,
        );
      if (res.statusCode === 401 || res.statusCode === 403)
        return fail(
          id,
          `Zaqar at ${shown} refused the token (${res.statusCode})`,
          `check that [zaqar] user_id may use project ${cfg.project_id}'s queues`,
        );
      if (res.statusCode === 404)
        return warn(
          id,
          `Zaqar at ${shown} has no queue ${cfg.queue_id} (404)`,
          "check [zaqar] queue_id against the stack's software_config_transport queue",
        );
      return fail(id, `Zaqar at ${shown} answered ${res.statusCode}`, UNREACHABLE_FIX);
    } catch (err) {
      return fail(id, errorMessage(err), UNREACHABLE_FIX);
    }
  });
}
