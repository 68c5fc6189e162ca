import type * as Http from 'node:http';
import type * as Https from 'node:https';
import { createRequire } from 'node:module';
import type * as Net from 'node:net';
import type * as Tls from 'node:tls';

// Agents for IPv6 link-local URLs with a zone id (zoned-url.ts takes the zone out of the URL): their sockets connect
// to "address%zone", which Node's net accepts and for which it asks the kernel for that interface.
//
// A module of its own, imported by the HTTP client alone, and its agents made at the first zoned URL: node:https loads
// node:tls, whose OpenSSL set-up and builtin JavaScript are a large share of the idle daemon's memory
// (docs/performance.md). Modules every daemon loads, whether or not it makes requests (the collectors' URL checks use
// zoned-url.ts), must not pull these in.
//
// Required, not imported: the ES module view of node:http reads every export, and on Node.js 22 its lazy WebSocket
// export loads undici, which compiles WebAssembly: a fatal V8 error in the lite-mode daemon (docs/build.md).
const nodeRequire = createRequire(import.meta.url);

type AgentPair = { http: Http.Agent; https: Https.Agent };
const agents = new Map<string, AgentPair>();
let makeAgents: ((target: string) => AgentPair) | undefined;

/** The agents for a zoned URL: sockets connect to "address%zone" whatever host a request asks for. */
export function zonedAgents(address: string, zone: string): AgentPair {
  const target = `${address}%${zone}`;
  let pair = agents.get(target);
  if (!pair) {
    pair = (makeAgents ??= agentMaker())(target);
    agents.set(target, pair);
  }
  return pair;
}

// Made at the first zoned URL: node:https loads node:tls, which a process that never asks one need not load.
function agentMaker(): (target: string) => AgentPair {
  const http = nodeRequire('node:http') as typeof Http;
  const https = nodeRequire('node:https') as typeof Https;
  const net = nodeRequire('node:net') as typeof Net;
  const tls = nodeRequire('node:tls') as typeof Tls;

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
  return (target) => ({ http: new ZonedHttpAgent(target), https: new ZonedHttpsAgent(target) });
}
