import type { HttpClient, HttpRequest } from './types.js';
import type { HttpClientOptions } from './client.js';

// got and its dependencies cost a noticeable share of start-up; one-shot commands that only read local sources
// never need them. This client loads the real one on its first request.
export function createLazyHttpClient(options: HttpClientOptions): HttpClient {
  let real: Promise<HttpClient> | undefined;
  return {
    request(req: HttpRequest) {
      real ??= import('./client.js').then((m) => m.createHttpClient(options));
      return real.then((client) => client.request(req));
    },
  };
}
