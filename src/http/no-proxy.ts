import { inRange, parseCidr, parseIp, sameIp, type IpAddress, type IpRange } from './ip-address.js';

// no_proxy as curl reads it (docs/proxies.md): `*` alone, host names matching themselves and every subdomain (a
// leading dot changes nothing), IP addresses, CIDR ranges, and any of those with `:port` to match that port only.
// Entries are separated by commas or white space and compared case-insensitively. An entry that is none of these is
// reported and skipped; the others still apply.

export type NoProxyRule =
  | { readonly kind: 'all' }
  | { readonly kind: 'domain'; readonly name: string; readonly port?: number }
  | { readonly kind: 'ip'; readonly address: IpAddress; readonly port?: number }
  | { readonly kind: 'cidr'; readonly range: IpRange; readonly port?: number };

export interface NoProxyList {
  readonly rules: readonly NoProxyRule[];
  /** Entries that were skipped because they are not a host, address, range or `*`. */
  readonly malformed: readonly string[];
}

/**
 * Addresses that never go through a proxy, whatever no_proxy says: the link-local metadata service (169.254.0.0/16,
 * fe80::/10) and OpenStack's IPv6 metadata address. A proxy cannot reach a link-local address of this instance, and
 * the metadata service answers for the instance that asks, so through a proxy it would describe the proxy.
 */
const NEVER_PROXIED = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128'];
/**
 * NEVER_PROXIED parsed, on first use: parsing an IPv6 range compiles Node's IPv6 pattern (~4 ms of CPU), which a
 * command that never asks, or only about IPv4 addresses and names, would otherwise pay when it loads the client.
 */
let neverProxied: readonly IpRange[] | undefined;

const HOST_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

export function parseNoProxy(text: string): NoProxyList {
  const rules: NoProxyRule[] = [];
  const malformed: string[] = [];
  for (const entry of text.split(/[\s,]+/)) {
    if (entry === '') continue;
    const rule = parseEntry(entry.toLowerCase());
    if (rule) rules.push(rule);
    else malformed.push(entry);
  }
  return { rules, malformed };
}

function parseEntry(entry: string): NoProxyRule | undefined {
  if (entry === '*') return { kind: 'all' };
  const { host, port } = splitPort(entry);
  if (port === null) return undefined;
  const portPart = port === undefined ? {} : { port };
  if (host.includes('/')) {
    const range = parseCidr(host.replace(/^\[(.*)\](\/\d+)$/, '$1$2'));
    return range ? { kind: 'cidr', range, ...portPart } : undefined;
  }
  const address = parseIp(host);
  if (address) return { kind: 'ip', address, ...portPart };
  const name = host.replace(/^\./, '').replace(/\.$/, '');
  if (name === '' || !name.split('.').every((label) => HOST_LABEL.test(label))) return undefined;
  return { kind: 'domain', name, ...portPart };
}

/** `host:port`, `[v6]:port`, bare IPv6 (no port), CIDR with a port. port null: a port that is not 1-65535. */
function splitPort(entry: string): { host: string; port?: number | null } {
  const bracketed = /^(\[[^\]]*\](?:\/\d+)?)(?::(.*))?$/.exec(entry);
  if (bracketed) return withPort(bracketed[1] as string, bracketed[2]);
  const colons = entry.split(':').length - 1;
  // More than one colon without brackets is an IPv6 address (or range) and carries no port.
  if (colons !== 1) return { host: entry };
  const at = entry.lastIndexOf(':');
  return withPort(entry.slice(0, at), entry.slice(at + 1));
}

function withPort(host: string, port: string | undefined): { host: string; port?: number | null } {
  if (port === undefined) return { host };
  const n = /^\d{1,5}$/.test(port) ? Number(port) : 0;
  return { host, port: n >= 1 && n <= 65535 ? n : null };
}

/** Does a request to `hostname` (as URL.hostname gives it: lower case, IPv6 in brackets) on `port` skip the proxy? */
export function bypassesProxy(rules: readonly NoProxyRule[], hostname: string, port: number): boolean {
  const address = parseIp(hostname);
  const name = hostname.replace(/\.$/, '');
  for (const rule of rules) {
    if (rule.kind === 'all') return true;
    if (rule.port !== undefined && rule.port !== port) continue;
    if (rule.kind === 'domain' && address === undefined && (name === rule.name || name.endsWith(`.${rule.name}`)))
      return true;
    if (rule.kind === 'ip' && address !== undefined && sameIp(address, rule.address)) return true;
    if (rule.kind === 'cidr' && address !== undefined && inRange(address, rule.range)) return true;
  }
  return false;
}

/** A metadata-service address (see NEVER_PROXIED). Names are not resolved: only literal addresses count. */
export function isMetadataAddress(hostname: string): boolean {
  const address = parseIp(hostname);
  if (address === undefined) return false;
  neverProxied ??= NEVER_PROXIED.map((c) => parseCidr(c) as IpRange);
  return neverProxied.some((range) => inRange(address, range));
}
