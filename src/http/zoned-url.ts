import type * as Http from 'node:http';
import type * as Https from 'node:https';
import { createRequire } from 'node:module';
import type * as Net from 'node:net';
import type * as Tls from 'node:tls';

// Required, not imported: the ES module view of a builtin reads every one of its exports, and on Node.js 22
// node:http's lazy WebSocket export loads undici, which compiles WebAssembly. In the daemon, which the unit starts with
// `--lite-mode` (jitless), that is a fatal V8 error, not an exception. (The build gives got the same builtins through
// require() for the same reason; docs/build.md.)
const nodeRequire = createRequire(import.meta.url);
const http = nodeRequire('node:http') as typeof Http;
const https = nodeRequire('node:https') as typeof Https;
const net = nodeRequire('node:net') as typeof Net;
const tls = nodeRequire('node:tls') as typeof Tls;

// IPv6 link-local URLs need a zone id ("http://[fe80::a9fe:a9fe%25eth0]/", RFC 6874; users also write "%eth0"), and
// the WHATWG URL parser got relies on refuses it. So the zone is taken out of the URL before got sees it, and put
// back where it matters: in the address the socket connects to (Node's net accepts "fe80::…%eth0" and asks the
// kernel for that interface). The Host header keeps the bracketed address without the zone, as RFC 6874 says.

export interface ZoneSplit {
  /** The URL got can parse: the zone removed. */
  readonly url: string;
  /** The bracketed IPv6 address and its zone (an interface name), when the URL had one. */
  readonly address?: string;
  readonly zone?: string;
}

// scheme://[address%25zone] or %zone; interface names are at most 15 characters of this set (Linux IFNAMSIZ).
const ZONED = /^([a-z][a-z0-9+.-]*:\/\/)\[([0-9a-f:.]+)%([A-Za-z0-9_.-]{1,17})\]/i;
const ZONE_NAME = /^[A-Za-z0-9_.-]{1,15}$/;

export function splitZone(url: string): ZoneSplit {
  const m = ZONED.exec(url);
  if (!m) return { url };
  const [whole, scheme, address, rawZone] = m as unknown as [string, string, string, string];
  // "%25" is the percent-encoded "%" of RFC 6874; a bare "%eth0" is what people type (an interface whose name starts
  // with "25" must then be written "%2525…").
  const zone = rawZone.startsWith('25') ? rawZone.slice(2) : rawZone;
  if (!ZONE_NAME.test(zone) || !net.isIPv6(address)) return { url };
  // The address as the URL parser writes it (lower case, zeros compressed), so withZone() finds it in got's URLs.
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  return { url: `${scheme}[${canonical}]${url.slice(whole.length)}`, address: canonical, zone };
}

/** `url` (zone-free, bracketed `address` in its authority) with the zone put back in RFC 6874 form. */
export function withZone(url: string, address: string, zone: string): string {
  return url.replace(`[${address}]`, `[${address}%25${zone}]`);
}

const agents = new Map<string, { http: Http.Agent; https: Https.Agent }>();

/** got's `agent` option for a zoned URL: sockets connect to "address%zone" whatever host got asks for. */
export function zonedAgents(address: string, zone: string): { http: Http.Agent; https: Https.Agent } {
  const target = `${address}%${zone}`;
  let pair = agents.get(target);
  if (!pair) {
    pair = { http: new ZonedHttpAgent(target), https: new ZonedHttpsAgent(target) };
    agents.set(target, pair);
  }
  return pair;
}

// keepAlive with a short idle timeout, like Node's global agent: an EC2 walk is many small GETs to one address. The
// socket is returned (not handed to the callback): the agent then adopts it at once, as it does net's own.
class ZonedHttpAgent extends http.Agent {
  constructor(private readonly target: string) {
    super({ keepAlive: true, timeout: 5000 });
  }
  override createConnection(options: Http.ClientRequestArgs): Net.Socket {
    return net.createConnection({ ...(options as Net.TcpNetConnectOpts), host: this.target });
  }
}

class ZonedHttpsAgent extends https.Agent {
  constructor(private readonly target: string) {
    super({ keepAlive: true, timeout: 5000 });
  }
  override createConnection(options: Http.ClientRequestArgs): Tls.TLSSocket {
    // An IP literal carries no server name (SNI); the certificate is checked against the address.
    const { servername: _sni, ...rest } = options as Tls.ConnectionOptions;
    return tls.connect({ ...rest, host: this.target });
  }
}
