import type { Agent } from 'node:http';
import type { Logger } from '../log/logger.js';
import { redactUrl } from '../log/redact.js';
import { HttpError } from './http-error.js';
import {
  anyProxy,
  DIRECT,
  isProblem,
  resolveProxySettings,
  routeFor,
  type ProxyInputs,
  type ProxyRoute,
  type ProxyServer,
  type ProxySettings,
} from './proxy-env.js';

// The client's side of proxies: per request, which agent each hop uses (again after every redirect, since the next hop
// may be a host that no_proxy names or a metadata address), and what an error says when a proxy was in the way.

type AgentsModule = typeof import('./proxy-agent.js');

/** One request's route, kept current across redirects. */
export interface RequestRoute {
  readonly route: ProxyRoute;
  /** A kept-alive connection of `agent` was found closed on reuse (see stopKeepAliveAfterClosedReuse). */
  closedOnReuse(agent: unknown): void;
  /** The agent for a hop to `url` (the first, then each redirect's): a proxy's pool, or undefined to go direct. */
  agentFor(url: string): Agent | undefined;
}

export class ProxyRouting {
  private readonly settings: ProxySettings;
  private readonly needsAgents: boolean;
  private agents: Promise<AgentsModule> | undefined;
  private readonly log: Logger | undefined;

  constructor(inputs: ProxyInputs, log?: Logger) {
    this.log = log;
    this.settings = resolveProxySettings(inputs);
    this.needsAgents = anyProxy(this.settings);
    if (this.settings.malformedNoProxy.length > 0) {
      log?.warn(
        { source: this.settings.noProxySource, entries: this.settings.malformedNoProxy },
        'ignoring malformed no_proxy entries',
      );
    }
    for (const entry of [this.settings.http, this.settings.https]) {
      if (entry && isProblem(entry)) log?.warn({ reason: entry.problem }, 'proxy setting unusable');
    }
  }

  /**
   * The route of a request to `url`; throws when it would need a proxy setting that is unusable. `setupMs` bounds the
   * wait for the proxy's connection (and its CONNECT answer) in the proxy's agent, so that it fails naming the proxy.
   */
  async begin(url: string, setupMs: number): Promise<RequestRoute | undefined> {
    if (!this.needsAgents) return undefined;
    const module = await (this.agents ??= import('./proxy-agent.js'));
    const state: { route: ProxyRoute } = { route: DIRECT };
    const agentFor = (target: string): Agent | undefined => {
      const route = routeFor(this.settings, target);
      if (route.kind === 'invalid') throw invalid(route.problem.problem, redactUrl(target));
      state.route = route;
      if (route.kind !== 'proxy') return undefined;
      return module.proxyAgentFor(route.proxy, new URL(target).protocol, setupMs);
    };
    // The first hop's route now: a setting that makes it unusable fails the request before anything is sent.
    agentFor(url);
    return {
      get route() {
        return state.route;
      },
      closedOnReuse: (used) => {
        if (state.route.kind === 'proxy' && module.stopKeepAliveAfterClosedReuse(used)) {
          this.log?.info(
            { proxy: state.route.proxy.shown },
            'proxy closes connections after each answer: not keeping them open',
          );
        }
      },
      agentFor,
    };
  }
}

function invalid(problem: string, shown: string): HttpError {
  return new HttpError(`request to ${shown} not sent: ${problem}`, shown, 'ERR_HTTP', { reason: problem });
}

/** A transport failure through a proxy, in terms of the proxy: only the proxy's address was ever connected to. */
export function proxyFailureReason(proxy: ProxyServer, code: string | undefined, reason: string): string {
  const fix = `or fix or unset ${proxy.source}`;
  if (code === 'ECONNREFUSED') return `proxy ${proxy.shown} refused the connection; check that it runs, ${fix}`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return `proxy host of ${proxy.shown} not resolvable (${code}); ${fix.slice(3)}`;
  return `through proxy ${proxy.shown}: ${reason}; check the proxy, ${fix}`;
}

/** A 407 from the proxy: which credentials to set or fix. */
export function proxyAuthReason(proxy: ProxyServer): string {
  return proxy.hasCredentials
    ? `proxy ${proxy.shown} refused the user and password given in ${proxy.source} (407 Proxy Authentication Required); fix them`
    : `proxy ${proxy.shown} requires a user and password (407 Proxy Authentication Required); put them in ${proxy.source} as http://user:password@host:port`;
}
