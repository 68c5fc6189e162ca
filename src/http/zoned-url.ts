import { isIPv6 } from 'node:net';

// IPv6 link-local URLs need a zone id ("http://[fe80::a9fe:a9fe%25eth0]/", RFC 6874; users also write "%eth0"), and
// the WHATWG URL parser refuses it. So the zone is taken out of the URL before the client parses it, and put
// back where it matters: in the address the socket connects to (zoned-agents.ts). The Host header keeps the
// bracketed address without the zone, as RFC 6874 says.

export interface ZoneSplit {
  /** The URL the parser accepts: the zone removed. */
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
  if (!ZONE_NAME.test(zone) || !isIPv6(address)) return { url };
  // The address as the URL parser writes it (lower case, zeros compressed), so withZone() finds it in URLs.
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  return { url: `${scheme}[${canonical}]${url.slice(whole.length)}`, address: canonical, zone };
}

/** `url` (zone-free, bracketed `address` in its authority) with the zone put back in RFC 6874 form. */
export function withZone(url: string, address: string, zone: string): string {
  return url.replace(`[${address}]`, `[${address}%25${zone}]`);
}
