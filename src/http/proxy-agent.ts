import type { Agent } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { HttpProxyAgent } from 'http-proxy-agent';
import { HttpsProxyAgent } from 'https-proxy-agent';
import type { ProxyServer } from './proxy-env.js';

// The connection pools for requests through a proxy. Loaded only when a proxy is configured, so an agent without
// one never reads this code or the proxy-agent libraries.
//
// http: URLs are forwarded (the request line carries the absolute URL, as requests and curl do: proxies commonly
// refuse CONNECT to ports other than 443); https: URLs are tunnelled with CONNECT, TLS running end to end with the
// origin and checked against its name and the request's CA. One pool per proxy URL, kind and setup bound for the
// life of the process, kept alive, so polls reuse their connections (also across configuration reloads).

/** The agents' socket options (the libraries keep them per agent and pass them to net.connect / tls.connect). */
interface WithConnectOpts {
  connectOpts: object;
}

/**
 * Runs one connect of a proxy agent with a deadline. The agents hand a request its socket only once the proxy has
 * accepted the connection (and answered CONNECT): the connection to a proxy that accepts and never answers, or never
 * accepts, is closed at the deadline, not left open behind an abandoned request. The socket is created synchronously
 * at the start of connect(), so the per-call signal is in the agent's options only for that moment.
 */
async function withDeadline<T>(agent: WithConnectOpts, setupMs: number, connect: () => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), setupMs);
  const shared = agent.connectOpts;
  agent.connectOpts = { ...shared, signal: controller.signal };
  let pending: Promise<T>;
  try {
    pending = connect();
  } finally {
    agent.connectOpts = shared;
  }
  try {
    return await pending;
  } catch (err) {
    if (!controller.signal.aborted) throw err;
    // ETIMEDOUT: retried like any connect timeout, and the client names the proxy.
    throw Object.assign(new Error(`no answer from the proxy within ${setupMs} ms`), { code: 'ETIMEDOUT', cause: err });
  } finally {
    clearTimeout(timer);
  }
}

// Each pool serves one scheme (agentsFor), so it says which itself: agent-base's fallback reads a stack trace on every
// request whose options do not settle it (a fifth of a proxied poll's CPU).
class ForwardAgent extends HttpProxyAgent<string> {
  constructor(
    url: URL,
    private readonly setupMs: number,
  ) {
    super(url, { keepAlive: true });
  }
  override isSecureEndpoint(): boolean {
    return false;
  }
  override connect(
    ...args: Parameters<HttpProxyAgent<string>['connect']>
  ): ReturnType<HttpProxyAgent<string>['connect']> {
    return withDeadline(this as unknown as WithConnectOpts, this.setupMs, () => super.connect(...args));
  }
}

class TunnelAgent extends HttpsProxyAgent<string> {
  constructor(
    url: URL,
    private readonly setupMs: number,
  ) {
    super(url, { keepAlive: true });
  }
  override isSecureEndpoint(): boolean {
    return true;
  }
  override connect(
    ...args: Parameters<HttpsProxyAgent<string>['connect']>
  ): ReturnType<HttpsProxyAgent<string>['connect']> {
    return withDeadline(this as unknown as WithConnectOpts, this.setupMs, () => super.connect(...args));
  }
}

const forwarders = new Map<string, Agent>();
// agent-base declares its agents as http.Agent; the tunnel does the TLS itself (with the request's TLS options), so
// it serves https: URLs where Node expects an https.Agent.
const tunnels = new Map<string, HttpsAgent>();

/** The agent for a URL of `protocol` through `proxy`, giving up on the proxy after `setupMs`. */
export function proxyAgentFor(proxy: ProxyServer, protocol: string, setupMs: number): Agent {
  const key = `${setupMs} ${proxy.url.href}`;
  if (protocol === 'https:') {
    let agent = tunnels.get(key);
    if (!agent) tunnels.set(key, (agent = new TunnelAgent(proxy.url, setupMs) as unknown as HttpsAgent));
    return agent;
  }
  let agent = forwarders.get(key);
  if (!agent) forwarders.set(key, (agent = new ForwardAgent(proxy.url, setupMs)));
  return agent;
}

/**
 * A proxy closed a kept-alive connection just as it was reused: it closes after every answer without saying so
 * (tinyproxy does), so keeping its connections only costs a failed attempt per request. Its forwarding pool stops
 * keeping them; true when that changed something (to log once). Tunnels are not affected: a CONNECT tunnel lives
 * as long as the origin keeps it.
 */
export function stopKeepAliveAfterClosedReuse(agent: unknown): boolean {
  if (!(agent instanceof ForwardAgent) || !agent.keepAlive) return false;
  agent.keepAlive = false;
  return true;
}

/** For tests and shutdown: close every pooled proxy connection. */
export function destroyProxyAgents(): void {
  for (const agent of [...forwarders.values(), ...tunnels.values()]) agent.destroy();
  forwarders.clear();
  tunnels.clear();
}
