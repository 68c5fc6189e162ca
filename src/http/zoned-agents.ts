import type * as Http from 'node:http';
import type * as Https from 'node:https';
import { createRequire } from 'node:module';
import type * as Net from 'node:net';
import type * as Tls from 'node:tls';

// Agents for IPv6 link-local URLs with a zone id (zoned-url.ts takes the zone out of the URL): their sockets connect
// to "address%zone", which Node's net accepts and for which it asks the kernel for that interface.
//
// A module of its own, imported by the HTTP client alone, and each kind of agent made at the first zoned URL of its
// scheme: node:https loads node:tls, whose OpenSSL set-up and builtin JavaScript are a large share of the idle
// daemon's memory (docs/performance.md). Modules every daemon loads, whether or not it makes requests (the
// collectors' URL checks use zoned-url.ts), must not pull these in.
//
// Required, not imported: the ES module view of node:http reads every export, and on Node.js 22 its lazy WebSocket
// export loads undici, which compiles WebAssembly: a fatal V8 error in the lite-mode daemon (docs/build.md).
const nodeRequire = createRequire(import.meta.url);

const agents = new Map<string, Http.Agent>();
let makeHttpAgent: ((target: string) => Http.Agent) | undefined;
let makeHttpsAgent: ((target: string) => Http.Agent) | undefined;

/** The agent for a zoned URL of `protocol`: its sockets connect to "address%zone" whatever host a request asks for. */
export function zonedAgent(address: string, zone: string, protocol: string): Http.Agent {
  const target = `${address}%${zone}`;
  const key = `${protocol}//${target}`;
  let agent = agents.get(key);
  if (!agent) {
    agent =
      protocol === 'https:'
        ? (makeHttpsAgent ??= httpsAgentMaker())(target)
        : (makeHttpAgent ??= httpAgentMaker())(target);
    agents.set(key, agent);
  }
  return agent;
}

// Each kind is made at the first zoned URL that needs it: node:https loads node:tls, which an http: URL (the EC2
// metadata service's) never needs.

// keepAlive with a short idle timeout, like Node's global agent: an EC2 walk is many small GETs to one address. The
// socket is returned (not handed to the callback): the agent then adopts it at once, as it does net's own.
function httpAgentMaker(): (target: string) => Http.Agent {
  const http = nodeRequire('node:http') as typeof Http;
  const net = nodeRequire('node:net') as typeof Net;
  class ZonedHttpAgent extends http.Agent {
    constructor(private readonly target: string) {
      super({ keepAlive: true, timeout: 5000 });
    }
    override createConnection(options: Http.ClientRequestArgs): Net.Socket {
      return net.createConnection({ ...(options as Net.TcpNetConnectOpts), host: this.target });
    }
  }
  return (target) => new ZonedHttpAgent(target);
}

function httpsAgentMaker(): (target: string) => Http.Agent {
  const https = nodeRequire('node:https') as typeof Https;
  const tls = nodeRequire('node:tls') as typeof Tls;
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
  return (target) => new ZonedHttpsAgent(target);
}
