import os from 'node:os';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import { splitZone } from '../http/zoned-url.js';
import type { Logger } from '../log/logger.js';
import { redactUrl } from '../log/redact.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { readJsonFile } from '../util/read-json-file.js';

// Which metadata service URLs the ec2 collector tries, in which order. `[ec2] metadata_url`, when set, is the only
// one (what an upstream configuration means; empty means no metadata service at all); otherwise `[ec2]
// metadata_urls`, where a zone of "*" ("http://[fe80::a9fe:a9fe%25*]/…") stands for every interface that is up with
// an IPv6 link-local address, as cloud-init tries OpenStack's link-local metadata address on each. The URL that last
// answered is tried first: it is kept in memory and in <state_dir>/ec2-metadata-url.json, so a restart (or a lost
// cache) on an IPv6-only network does not wait for 169.254.169.254 to fail first.

export const STATE_FILE = 'ec2-metadata-url.json';
const ANY_ZONE = /%(?:25)?\*\]/;

export interface Candidates {
  /** URLs to try, in order (zone ids in RFC 6874 form). */
  readonly urls: readonly string[];
  /** Configured entries that are not http(s) URLs, with the reason (redacted, ready to show). */
  readonly invalid: readonly string[];
}

export type Interfaces = NodeJS.Dict<os.NetworkInterfaceInfo[]>;

/** Names of interfaces that are up with an IPv6 link-local address (not loopback), in the system's order. */
export function linkLocalInterfaces(interfaces: Interfaces): string[] {
  const names: string[] = [];
  for (const [name, addrs] of Object.entries(interfaces)) {
    if (addrs?.some((a) => a.family === 'IPv6' && !a.internal && /^fe80:/i.test(a.address))) names.push(name);
  }
  return names;
}

export function configuredUrls(config: AgentConfig, interfaces: Interfaces = os.networkInterfaces()): Candidates {
  const single = config.ec2.metadata_url;
  const listed =
    single !== undefined
      ? single.trim() === ''
        ? []
        : [single.trim()]
      : config.ec2.metadata_urls.map((u) => u.trim()).filter(Boolean);
  const urls: string[] = [];
  const invalid: string[] = [];
  let zones: string[] | undefined;
  for (const entry of listed) {
    const expanded = ANY_ZONE.test(entry)
      ? (zones ??= linkLocalInterfaces(interfaces)).map((zone) => entry.replace(ANY_ZONE, `%25${zone}]`))
      : [entry];
    for (const url of expanded) {
      const problem = urlProblem(url);
      if (problem) invalid.push(`${redactUrl(entry)}: ${problem}`);
      else if (!urls.includes(url.replace(/\/+$/, ''))) urls.push(url.replace(/\/+$/, ''));
    }
  }
  return { urls, invalid };
}

function urlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(splitZone(url).url);
  } catch {
    return 'not a URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'not an http(s) URL';
  return undefined;
}

/** Where the collector keeps the URL that last answered ('' once the state file named none). */
export interface MetadataUrlMemory {
  metadataUrl?: string;
}

/** `urls` with the one that last answered first (from memory, else from the state file, read once per process). */
export async function orderByLastAnswer(
  urls: readonly string[],
  memory: MetadataUrlMemory,
  stateDir: string,
  log: Logger,
): Promise<string[]> {
  if (memory.metadataUrl === undefined) {
    const read = await readJsonFile(path.join(stateDir, STATE_FILE), 64 * 1024);
    const url =
      read.ok && typeof read.value === 'object' && read.value !== null
        ? (read.value as { metadata_url?: unknown }).metadata_url
        : undefined;
    if (!read.ok && read.reason !== 'missing')
      log.debug({ reason: read.reason }, 'remembered metadata URL unreadable; ignored');
    memory.metadataUrl = typeof url === 'string' ? url : '';
  }
  const last = memory.metadataUrl;
  if (!urls.includes(last)) return [...urls];
  return [last, ...urls.filter((u) => u !== last)];
}

/** Remember the URL that answered, in memory and (when it changed) in the state file. A failed write only warns. */
export async function rememberAnswer(
  url: string,
  memory: MetadataUrlMemory,
  stateDir: string,
  log: Logger,
): Promise<void> {
  if (memory.metadataUrl === url) return;
  memory.metadataUrl = url;
  try {
    await writeFileAtomic(path.join(stateDir, STATE_FILE), JSON.stringify({ metadata_url: url }), {
      mode: 0o600,
      mkdirMode: 0o700,
    });
  } catch (err) {
    log.warn(
      { reason: (err as NodeJS.ErrnoException).code ?? String(err) },
      'could not record which metadata URL answered; it is remembered until restart',
    );
  }
}
