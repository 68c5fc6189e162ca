import type { HttpClient, HttpResponse } from '../http/types.js';
import { fail, ok, skipped, warn, type CheckResult } from './check.js';

// Clock skew against the servers the other checks talk to: every response's Date header is compared with the local
// clock when the response arrived, so the check costs no request of its own. Signed requests (CFN's signature,
// Keystone tokens' validity, TempURL expiry) fail when the clock is far off.

const SKEW_WARN_SECONDS = 5 * 60;
const SKEW_FAIL_SECONDS = 15 * 60;

export interface SkewSample {
  /** Local time minus server time, in seconds (positive: this clock is ahead). */
  readonly skewSeconds: number;
  readonly url: string;
}

/** An HttpClient that records each answer's Date header against the local clock. */
export function recordSkew(http: HttpClient, samples: SkewSample[], now: () => number = Date.now): HttpClient {
  return {
    async request(req) {
      const res: HttpResponse = await http.request(req);
      const header = res.headers.date;
      const text = Array.isArray(header) ? header[0] : header;
      const server = text ? Date.parse(text) : NaN;
      if (Number.isFinite(server))
        samples.push({ skewSeconds: Math.round((now() - server) / 1000), url: res.redactedUrl.replace(/[?#].*$/, '') });
      return res;
    },
  };
}

/** The verdict on the largest skew seen: ok up to 5 minutes, a warning up to 15, a failure beyond. */
export function skewCheck(samples: readonly SkewSample[]): CheckResult {
  const id = 'clock';
  if (samples.length === 0) return skipped(id, 'no server answered with a Date header');
  const worst = samples.reduce((a, b) => (Math.abs(b.skewSeconds) > Math.abs(a.skewSeconds) ? b : a));
  const s = worst.skewSeconds;
  const text = `this clock is ${Math.abs(s)} s ${s >= 0 ? 'ahead of' : 'behind'} ${worst.url} (its Date header)`;
  const fix =
    'synchronise the clock (chrony or systemd-timesyncd with a reachable NTP server): signed requests and tokens fail on skew';
  if (Math.abs(s) > SKEW_FAIL_SECONDS) return fail(id, `${text}, more than ${SKEW_FAIL_SECONDS / 60} minutes`, fix);
  if (Math.abs(s) > SKEW_WARN_SECONDS) return warn(id, `${text}, more than ${SKEW_WARN_SECONDS / 60} minutes`, fix);
  return ok(id, `${text}; within ${SKEW_WARN_SECONDS / 60} minutes`);
}
