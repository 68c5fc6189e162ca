import type { Logger } from '../log/logger.js';
import { redactUrl } from '../log/redact.js';
import { HttpError } from './http-error.js';
import type { ProxyAgents } from './proxy-agent.js';
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

// The client's side of proxies: per request, which agents got uses (again after every redirect, since the next hop
// may be a host that no_proxy names or a metadata address), and what an error says when a proxy was in the way.

type AgentsModule = typeof import('./proxy-agent.js');

/** One request's route, kept current across redirects. */
export interface RequestRoute {
  readonly route: ProxyRoute;
  /** Options for got: the agents for the first hop and a hook that picks them again for each redirect. */
  /** A kept-alive connection of `agent` was found closed on reuse (see stopKeepAliveAfterClosedReuse). */
  closedOnReuse(agent: unknown): void;
  readonly gotOptions: { agent: ProxyAgents; hooks: { beforeRedirect: ((options: RedirectOptions) => void)[] } };
}

/** The part of got's options a redirect hook changes (got's own types would import got here). */
interface RedirectOptions {
  url?: URL | string | undefined;
  agent: { http?: import('node:http').Agent | false; https?: import('node:https').Agent | false };
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
   * wait for the proxy's connection (and its CONNECT answer), which got's own timeouts do not cover.
   */
  async begin(url: string, shown: string, setupMs: number): Promise<RequestRoute | undefined> {
    if (!this.needsAgents) return undefined;
    const module = await (this.agents ??= import('./proxy-agent.js'));
    const state: { route: ProxyRoute } = { route: DIRECT };
    const agentsOf = (target: string | undefined, targetShown: string): ProxyAgents => {
      const route = target === undefined ? DIRECT : routeFor(this.settings, target);
      if (route.kind === 'invalid') throw invalid(route.problem.problem, targetShown);
      state.route = route;
      return route.kind === 'proxy' && target !== undefined
        ? module.agentsFor(route.proxy, new URL(target).protocol, setupMs)
        : {};
    };
    const agent = agentsOf(url, shown);
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
      gotOptions: {
        agent,
        hooks: {
          beforeRedirect: [
            (options) => {
              const next = options.url === undefined ? undefined : String(options.url);
              options.agent = agentsOf(next, redactUrl(next ?? ''));
            },
          ],
        },
      },
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
