import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentConfig } from '../config/options.js';
import { scrubText, urlSecrets } from '../log/redact.js';
import { signalQueueDir } from '../state/signal-queue-paths.js';
import type { BundleEntry } from './bundle-entry.js';
import { redactJson, secretsIn } from './redact-json.js';

// The agent's state as it is on disk, for a support bundle: the deployment records (<state_dir>/deployments), what
// each deployment was given and answered (<deployed_dir>/<id>.json, <id>.notify.json) and the cfn-signal queue
// (<state_dir>/signals). A file that is not JSON (a damaged record: what support most wants to see) is copied as
// text, scrubbed. The largest files are cut: a deployment's output can be megabytes.

const MAX_FILE_CHARS = 256 * 1024;

interface StateFile {
  readonly name: string;
  readonly text: string;
  readonly json?: unknown;
}

export interface StateFiles {
  readonly files: readonly StateFile[];
  /** Every credential they hold: registered before anything of the bundle is written. */
  readonly secrets: ReadonlySet<string>;
}

export async function readStateFiles(config: AgentConfig): Promise<StateFiles> {
  const dirs: Array<[string, string]> = [
    [path.join(config.agent.state_dir, 'deployments'), 'state/deployments'],
    [config.deploy.deployed_dir, 'state/deployed'],
    [signalQueueDir(config), 'state/signals'],
  ];
  const files: StateFile[] = [];
  const secrets = new Set<string>();
  for (const [dir, name] of dirs) {
    const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.json')).sort();
    for (const file of names) {
      const text = await readFile(path.join(dir, file), 'utf8').catch(() => undefined);
      if (text === undefined) continue;
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      if (json !== undefined) {
        secretsIn(json, secrets);
        for (const url of urls(json)) for (const s of urlSecrets(url)) secrets.add(s);
      }
      files.push({ name: `${name}/${file}`, text, ...(json !== undefined ? { json } : {}) });
    }
  }
  return { files, secrets };
}

/** The files as bundle entries, each scrubbed (call once the state's secrets are registered). */
export function stateEntries(state: StateFiles): BundleEntry[] {
  return state.files.map((f) => ({
    name: f.name,
    text: cut(f.json !== undefined ? `${JSON.stringify(redactJson(f.json), null, 2)}\n` : scrubText(f.text)),
  }));
}

function cut(text: string): string {
  return text.length <= MAX_FILE_CHARS
    ? text
    : `${text.slice(0, MAX_FILE_CHARS)}\n… (cut at ${MAX_FILE_CHARS} characters)\n`;
}

function urls(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string' && /^[a-z][a-z0-9+.-]*:\/\//i.test(value)) out.push(value);
  else if (Array.isArray(value)) for (const v of value) urls(v, out);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) urls(v, out);
  return out;
}
