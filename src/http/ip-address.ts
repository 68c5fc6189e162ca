import { isIP } from 'node:net';

// IP literals as bytes, for the proxy decision: no_proxy CIDRs and the metadata ranges that never go through a
// proxy. Node's BlockList would do the matching, but it treats an IPv4-mapped IPv6 address (::ffff:169.254.169.254,
// which the URL parser writes as ::ffff:a9fe:a9fe) as IPv6 only; here such an address is the IPv4 address it carries.

export interface IpAddress {
  readonly version: 4 | 6;
  readonly bytes: Uint8Array;
}

export interface IpRange {
  readonly address: IpAddress;
  readonly prefix: number;
}

/** An IP literal (IPv6 with or without brackets or a zone id) -> bytes; undefined for anything else. */
export function parseIp(text: string): IpAddress | undefined {
  let host = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = host.indexOf('%');
  if (zone >= 0) host = host.slice(0, zone);
  const kind = isIP(host);
  if (kind === 4) return { version: 4, bytes: Uint8Array.from(host.split('.'), Number) };
  if (kind !== 6) return undefined;
  const bytes = ipv6Bytes(host.toLowerCase());
  // An IPv4-mapped address reaches the IPv4 host: decide on that address.
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff)
    return { version: 4, bytes: bytes.slice(12) };
  return { version: 6, bytes };
}

/** `10.0.0.0/8`, `fd00::/8` (no brackets) -> range; undefined when malformed. */
export function parseCidr(text: string): IpRange | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const address = parseIp(text.slice(0, slash));
  const bits = text.slice(slash + 1);
  if (!address || !/^\d{1,3}$/.test(bits)) return undefined;
  // A mapped IPv6 range is compared as the IPv4 range it covers.
  const mappedShift = address.version === 4 && text.includes(':') ? 96 : 0;
  const prefix = Number(bits) - mappedShift;
  if (prefix < 0 || prefix > address.bytes.length * 8) return undefined;
  return { address, prefix };
}

export function inRange(ip: IpAddress, range: IpRange): boolean {
  if (ip.version !== range.address.version) return false;
  let bits = range.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((ip.bytes[i] ?? 0) & mask) !== ((range.address.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

export function sameIp(a: IpAddress, b: IpAddress): boolean {
  return a.version === b.version && a.bytes.every((byte, i) => byte === b.bytes[i]);
}

/** Bytes of an address net.isIP() already accepted as IPv6 (so the shape is known to be valid). */
function ipv6Bytes(host: string): Uint8Array {
  // A dotted IPv4 tail (::ffff:1.2.3.4) is the last two 16-bit words written another way.
  const text = host.replace(
    /(\d+)\.(\d+)\.(\d+)\.(\d+)$/,
    (_m, a: string, b: string, c: string, d: string) =>
      `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`,
  );
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((w) => parseInt(w, 16)));
  const [head = '', rest] = text.split('::') as [string, string | undefined];
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const words = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[i * 2] = w >> 8;
    bytes[i * 2 + 1] = w & 0xff;
  });
  return bytes;
}
