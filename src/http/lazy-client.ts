import type { HttpClient, HttpRequest } from './types.js';
import { setSecrets, urlCredentialSecrets } from '../log/redact.js';
import type { HttpClientOptions } from './client.js';

// The client's code and Node's http module cost a share of start-up that one-shot commands which only read local
// sources never need. This client loads the real one on its first request.
export function createLazyHttpClient(options: HttpClientOptions): HttpClient {
  // Proxy passwords are scrubbed from log lines from the start, not only once the first request loads the client.
  if (options.proxy) {
    const { config, env } = options.proxy;
    const values = [
      config.http_proxy,
      config.https_proxy,
      env.http_proxy,
      env.HTTP_PROXY,
      env.https_proxy,
      env.HTTPS_PROXY,
    ];
    // Replaced by the next client's (a reload): a proxy password that is no longer configured stops being scrubbed.
    setSecrets('proxy settings', values.flatMap(urlCredentialSecrets));
  }
  let real: Promise<HttpClient> | undefined;
  return {
    request(req: HttpRequest) {
      real ??= import('./client.js').then((m) => m.createHttpClient(options));
      return real.then((client) => client.request(req));
    },
  };
}
