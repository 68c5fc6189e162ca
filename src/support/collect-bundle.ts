import { readFile } from 'node:fs/promises';
import os from 'node:os';
import type { LoadedConfig } from '../config/load.js';
import { runDoctor } from '../doctor/run-doctor.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import { scrubText, setSecrets } from '../log/redact.js';
import { readReport } from '../status/report.js';
import { verdictOf } from '../status/verdict.js';
import { VERSION } from '../version.js';
import type { BundleEntry } from './bundle-entry.js';
import { configEntries } from './config-files.js';
import { readJournal } from './journal.js';
import { redactJson } from './redact-json.js';
import { readStateFiles, stateEntries } from './state-files.js';

// `os-config-agent collect-logs`: what support needs to understand an instance, gathered into entries of one
// tarball (as `cloud-init collect-logs` does): status and doctor as --json prints them, the agent's journal, the
// configuration, the deployment records and the signal queue, and the versions. Secrets never leave: every secret
// the agent knows (the configuration's, the deployments' secret inputs, the signal credentials in the records) is
// registered first, and every entry is scrubbed with them and by shape.

export const SUPPORT_OWNER = 'collect-logs';
const UNIT = 'os-config-agent.service';
const LEGACY_LOG = '/var/log/os-apply-config.log';

export interface BundleInputs {
  readonly loaded: LoadedConfig;
  readonly log: Logger;
  readonly http: HttpClient;
  readonly env: NodeJS.ProcessEnv;
  /** Seconds for each doctor check; 0 leaves the doctor out (it reaches every configured endpoint). */
  readonly doctorTimeoutSeconds: number;
}

export async function collectBundle(inputs: BundleInputs): Promise<BundleEntry[]> {
  const { loaded, log } = inputs;
  const state = await readStateFiles(loaded.config);
  setSecrets(SUPPORT_OWNER, state.secrets);
  const report = await readReport(loaded, log);
  const entries: BundleEntry[] = [
    json('status.json', { ...report, result: verdictOf(report) }),
    inputs.doctorTimeoutSeconds > 0
      ? json(
          'doctor.json',
          await runDoctor({
            loaded,
            http: inputs.http,
            log,
            env: inputs.env,
            timeoutMs: inputs.doctorTimeoutSeconds * 1000,
          }),
        )
      : { name: 'doctor.json', text: '{ "skipped": "collect-logs --no-doctor" }\n' },
  ];
  const journal = await readJournal(UNIT, inputs.env);
  entries.push({
    name: 'journal.log',
    text: scrubText(journal.text || `# ${journal.missing ?? 'no journal lines'}\n`),
  });
  const legacy = await readFile(loaded.paths.map(LEGACY_LOG), 'utf8').catch(() => undefined);
  if (legacy !== undefined) entries.push({ name: 'os-apply-config.log', text: scrubText(legacy) });
  entries.push(...(await configEntries(loaded)), ...stateEntries(state));
  entries.push({ name: 'versions.txt', text: await versions(loaded, report.agent.version) });
  return entries;
}

function json(name: string, value: unknown): BundleEntry {
  return { name, text: `${JSON.stringify(redactJson(value), null, 2)}\n` };
}

async function versions(loaded: LoadedConfig, daemon: string | undefined): Promise<string> {
  const osRelease = await readFile(loaded.paths.map('/etc/os-release'), 'utf8').catch(() => '');
  const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(osRelease)?.[1] ?? 'unknown';
  return [
    `os-config-agent: ${VERSION}`,
    `running daemon: ${daemon ?? 'none running, or one older than 0.2.0'}`,
    `node: ${process.version}`,
    `system: ${pretty}`,
    `kernel: ${os.type()} ${os.release()} ${os.arch()}`,
    `collected: ${new Date().toISOString()}`,
    '',
  ].join('\n');
}
