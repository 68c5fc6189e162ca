// Checks of text options whose value has a syntax of its own, so that a wrong one is a configuration problem when the
// file is read (the default kept) instead of a failure of every deployment later (systemd-run refusing the property).

/** systemd's MemoryMax=: bytes with an optional K, M, G, T, P or E suffix (base 1024), a percentage, or infinity. */
export function memoryMaxProblem(value: string): string | undefined {
  const v = value.trim();
  if (v === '' || /^(\d+(\.\d+)?[KMGTPE]?|\d+(\.\d+)?%|infinity)$/.test(v)) return undefined;
  return `"${value}" is not a memory limit (512M, 2G, 50%, infinity)`;
}

/** systemd's CPUQuota=: a percentage of one CPU. */
export function cpuQuotaProblem(value: string): string | undefined {
  const v = value.trim();
  if (v === '' || /^\d+(\.\d+)?%$/.test(v)) return undefined;
  return `"${value}" is not a CPU quota (50%, 200%)`;
}

// Whitespace and control characters (C0, DEL, C1): never part of a URL a service gave, often a paste or quoting error.
export function hasUnprintable(text: string): boolean {
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f) || /\s/u.test(ch)) return true;
  }
  return false;
}

/**
 * An http(s) URL with a host, checked when the configuration is read so that a typo is reported there instead of
 * failing every request later. The value is never quoted back: URLs hold passwords and signatures (a TempURL, a
 * proxy's user:password). WHATWG URL parsing is not used: it refuses the IPv6 zone ids (`%25eth0`, `%25*`) the
 * metadata URLs use. `schemeOptional`: a bare host[:port] means http (proxies, as curl reads them).
 */
export function urlProblem(value: string, options: { schemeOptional?: boolean } = {}): string | undefined {
  if (value === '') return undefined;
  if (hasUnprintable(value)) return 'the URL holds whitespace or a control character';
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) || !options.schemeOptional ? value : `http://${value}`;
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)/i.exec(withScheme);
  if (!m) return 'not an http:// or https:// URL';
  const scheme = m[1]!.toLowerCase();
  if (scheme !== 'http' && scheme !== 'https')
    return `the URL's scheme is ${scheme}: only http and https are supported`;
  const authority = m[2]!;
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const host = hostPort.startsWith('[') ? hostPort.slice(1, hostPort.indexOf(']')) : hostPort.split(':')[0]!;
  if (host === '' || (hostPort.startsWith('[') && !hostPort.includes(']'))) return 'the URL has no host';
  const port = hostPort.startsWith('[') ? hostPort.slice(hostPort.indexOf(']') + 1) : hostPort.slice(host.length);
  if (port !== '' && !/^:\d{0,5}$/.test(port)) return 'the URL has a malformed port';
  return undefined;
}

/** A name sent as it is in a request (the stack name of the cfn collector): printable, no whitespace. */
export function namePartProblem(value: string): string | undefined {
  return hasUnprintable(value) ? 'the name holds whitespace or a control character' : undefined;
}
