import { setSecrets, urlCredentialSecrets } from '../log/redact.js';
import { bypassesProxy, isMetadataAddress, parseNoProxy, type NoProxyRule } from './no-proxy.js';

// Which proxy, if any, a request goes through: the standard variables as python-requests reads them, overridden by
// the agent's options. Pure decisions, no sockets: the agents live in proxy-agent.ts and load only when needed.
//
// Rules (docs/proxies.md):
// - http_proxy for http: URLs, https_proxy for https: URLs; each variable in lower or upper case, the lower-case one
//   winning when both are set, and a lower-case one set to "" hiding the upper-case one (as requests does).
// - [agent] http_proxy / https_proxy / no_proxy, when set (even to ""), replace the matching variable.
// - A proxy value without a scheme means http:// (requests' rule); the port defaults to 80 (443 for https://).
// - Metadata addresses never go through a proxy; loopback does unless no_proxy names it (as with requests).

/** The raw inputs: the agent's options and the process environment. */
export interface ProxyInputs {
  readonly config: {
    readonly http_proxy?: string | undefined;
    readonly https_proxy?: string | undefined;
    readonly no_proxy?: string | undefined;
  };
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface ProxyServer {
  /** The URL as the agents need it, credentials included: never log it. */
  readonly url: URL;
  /** Scheme, host and port only: safe to log. */
  readonly shown: string;
  /** Where it was configured, for error messages ("the https_proxy environment variable"). */
  readonly source: string;
  readonly hasCredentials: boolean;
}

/** A configured value that is not a usable proxy URL: every request that would use it fails with this message. */
export interface ProxyProblem {
  readonly problem: string;
  readonly source: string;
}

export interface ProxySettings {
  readonly http?: ProxyServer | ProxyProblem;
  readonly https?: ProxyServer | ProxyProblem;
  readonly noProxy: readonly NoProxyRule[];
  /** no_proxy entries skipped as malformed, with where they came from (to warn about once). */
  readonly malformedNoProxy: readonly string[];
  readonly noProxySource?: string;
}

export type ProxyRoute =
  | { readonly kind: 'direct' }
  | { readonly kind: 'proxy'; readonly proxy: ProxyServer }
  | { readonly kind: 'invalid'; readonly problem: ProxyProblem };

export const DIRECT: ProxyRoute = { kind: 'direct' };

interface Chosen {
  readonly value: string;
  readonly source: string;
}

/** The effective value of one setting: the option if set, else the lower-case variable, else the upper-case one. */
function choose(inputs: ProxyInputs, name: 'http_proxy' | 'https_proxy' | 'no_proxy'): Chosen | undefined {
  const option = inputs.config[name];
  if (option !== undefined) return { value: option.trim(), source: `the [agent] ${name} option` };
  for (const variable of [name, name.toUpperCase()]) {
    const value = inputs.env[variable];
    if (value !== undefined) return { value: value.trim(), source: `the ${variable} environment variable` };
  }
  return undefined;
}

export function resolveProxySettings(inputs: ProxyInputs): ProxySettings {
  const noProxy = choose(inputs, 'no_proxy');
  const list = parseNoProxy(noProxy?.value ?? '');
  const http = proxyServer(choose(inputs, 'http_proxy'));
  const https = proxyServer(choose(inputs, 'https_proxy'));
  return {
    ...(http ? { http } : {}),
    ...(https ? { https } : {}),
    noProxy: list.rules,
    malformedNoProxy: list.malformed,
    ...(noProxy ? { noProxySource: noProxy.source } : {}),
  };
}

/** True when some URL could go through a proxy (the only case that needs the proxy agents). */
export function anyProxy(settings: ProxySettings): boolean {
  return settings.http !== undefined || settings.https !== undefined;
}

function proxyServer(chosen: Chosen | undefined): ProxyServer | ProxyProblem | undefined {
  if (chosen === undefined || chosen.value === '') return undefined;
  const { value, source } = chosen;
  // One proxy value per source: a reconfigured proxy's old password stops being scrubbed.
  setSecrets(`proxy ${source}`, urlCredentialSecrets(value));
  // The value itself is never quoted back: it may hold a password, and a malformed one cannot be redacted reliably.
  const expected = 'expected http://[user:password@]host[:port]';
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`);
  } catch {
    return { problem: `${source} is not a valid proxy URL (${expected}); fix or unset it`, source };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return {
      problem: `${source} names a ${url.protocol.slice(0, -1)} proxy, which is not supported (${expected}); fix or unset it`,
      source,
    };
  }
  if (url.hostname === '') return { problem: `${source} has no proxy host (${expected}); fix or unset it`, source };
  const hasCredentials = url.username !== '' || url.password !== '';
  return { url, shown: `${url.protocol}//${url.host}`, source, hasCredentials };
}

export function isProblem(entry: ProxyServer | ProxyProblem): entry is ProxyProblem {
  return 'problem' in entry;
}

/** The route of one request. URLs the WHATWG parser refuses go direct (the request itself then fails as before). */
export function routeFor(settings: ProxySettings, target: string | URL): ProxyRoute {
  let url: URL;
  try {
    url = typeof target === 'string' ? new URL(target) : target;
  } catch {
    return DIRECT;
  }
  const entry = url.protocol === 'http:' ? settings.http : url.protocol === 'https:' ? settings.https : undefined;
  if (entry === undefined || isMetadataAddress(url.hostname)) return DIRECT;
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (bypassesProxy(settings.noProxy, url.hostname, port)) return DIRECT;
  return isProblem(entry) ? { kind: 'invalid', problem: entry } : { kind: 'proxy', proxy: entry };
}
