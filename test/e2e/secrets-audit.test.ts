import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startOrchestrator, type PollTransport } from '../helpers/orchestrator/orchestrator.js';
import { killTree, prepareRoot, startDaemon, stopDaemon, until, walkFiles } from '../helpers/fault-daemon.js';

// Secrets audit of a whole daemon run, once per poll transport, at debug log level, with every secret the fixtures
// know in play: the CFN secret key, the signal secret key and its pre-signed URL signatures, the Keystone password (in
// the config and as the deploy_password input of HEAT_SIGNAL deployments), the Swift TempURL key and signatures,
// Keystone tokens, and a secret input of the deployments. Faults (a failing metadata poll, a refused signal, expired
// tokens) make the agent log its error paths too. Then:
//   - no log line (stdout or stderr) holds any secret;
//   - no world-readable file under the root holds any secret;
//   - every file the agent (or its bundled hooks) wrote has its documented mode, and nothing else was written.

interface ModeRule {
  readonly pattern: RegExp;
  readonly mode: number;
  readonly what: string;
}

// Paths relative to the root. docs/configuration.md "Paths" and docs/reliability.md document these.
const FILE_MODES: readonly ModeRule[] = [
  { pattern: /^etc\/os-collect-config\.conf$/, mode: 0o600, what: 'config rewritten from Heat metadata' },
  { pattern: /^var\/lib\/os-collect-config\/[^/]+\.json(\.orig|\.last)?$/, mode: 0o600, what: 'metadata cache' },
  { pattern: /^var\/run\/os-collect-config\/[^/]+\.json(\.orig|\.last)?$/, mode: 0o600, what: 'backup cache' },
  {
    pattern: /^var\/lib\/heat-config\/deployed\/[^/]+\.(notify\.)?json$/,
    mode: 0o600,
    what: 'deployed/<id>.json and .notify.json',
  },
  { pattern: /^var\/run\/heat-config\/heat-config$/, mode: 0o600, what: 'heat-config deployments file' },
  { pattern: /^var\/lib\/os-config-agent\/deployments\/[^/]+\.json$/, mode: 0o600, what: 'deployment state records' },
  { pattern: /^var\/lib\/os-config-agent\/deploy\.lock$/, mode: 0o600, what: 'deployment lock' },
  { pattern: /^var\/lib\/os-config-agent\/signals\/[^/]+\.json$/, mode: 0o600, what: 'signals queued by cfn-signal' },
  {
    pattern: /^var\/lib\/os-config-agent\/(signals\.lock|daemon\.pid)$/,
    mode: 0o600,
    what: 'signal queue lock, daemon pid file',
  },
  { pattern: /^run\/os-config-agent\/agent-status\.json$/, mode: 0o600, what: "the daemon's facts for status" },
  { pattern: /^var\/run\/os-refresh-config\.lock$/, mode: 0o644, what: 'refresh lock (empty)' },
  { pattern: /^etc\/app\/app\.conf$/, mode: 0o644, what: 'rendered template (new file default)' },
  { pattern: /^var\/lib\/heat-config\/heat-config-script\/[^/]+$/, mode: 0o700, what: 'script hook: the script' },
  { pattern: /^var\/run\/heat-config\/heat-config-script\/[^/]+$/, mode: 0o600, what: 'script hook: outputs' },
];

const DIR_MODES: readonly ModeRule[] = [
  { pattern: /^var\/lib\/os-collect-config$/, mode: 0o700, what: 'cache directory' },
  { pattern: /^var\/lib\/os-config-agent$/, mode: 0o700, what: 'state directory' },
  { pattern: /^var\/lib\/os-config-agent\/deployments$/, mode: 0o700, what: 'state records' },
  { pattern: /^var\/lib\/os-config-agent\/signals$/, mode: 0o700, what: 'signal queue' },
  { pattern: /^var\/lib\/heat-config\/deployed$/, mode: 0o700, what: 'deployed directory' },
  { pattern: /^run\/os-config-agent$/, mode: 0o700, what: 'runtime directory' },
];

/** Inputs the test itself put in the root (not the agent's output). */
const TEST_INPUTS = [
  /^var\/lib\/heat-config\/hooks\//,
  /^usr\/libexec\//,
  /^var\/lib\/heat-cfntools\//,
  /^etc\/os-collect-config\.conf\.d\//,
];

const TRANSPORTS: PollTransport[] = ['POLL_SERVER_CFN', 'POLL_SERVER_HEAT', 'POLL_TEMP_URL'];
const TOKEN = /tok-[0-9a-f]{8}-[0-9a-f-]{27}/;

function walkDirs(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (lstatSync(p).isDirectory()) out.push(path.relative(base, p), ...walkDirs(p, base));
  }
  return out;
}

for (const transport of TRANSPORTS) {
  t.test(`secrets audit: ${transport}`, async (t) => {
    const o = await startOrchestrator({ transport });
    t.teardown(() => o.close());
    const inputSecret = `input-secret-${transport.toLowerCase()}-${Date.now()}`;
    const script = (body: string) => `#!/bin/sh\n${body}\n`;
    const secretInput = [{ name: 'db_password', value: inputSecret }];
    const ids = [
      o.addDeployment({
        name: 'cfn',
        group: 'script',
        config: script('echo cfn'),
        inputs: secretInput,
        signal: 'CFN_SIGNAL',
      }),
      o.addDeployment({
        name: 'heat',
        group: 'script',
        config: script('echo heat'),
        inputs: secretInput,
        signal: 'HEAT_SIGNAL',
      }),
      o.addDeployment({
        name: 'tempurl',
        group: 'script',
        config: script('echo tempurl'),
        inputs: secretInput,
        signal: 'TEMP_URL_SIGNAL',
      }),
      o.addDeployment({
        name: 'nohook',
        group: 'no-such-tool',
        config: 'x',
        inputs: secretInput,
        signal: 'HEAT_SIGNAL',
      }),
    ];
    o.addDeployment({
      name: 'settings',
      group: 'os-apply-config',
      config: { app: { port: 8080 } },
      signal: 'NO_SIGNAL',
    });
    const root = prepareRoot(t.testdir(), o, {
      confd: '[agent]\nhttp_retries = 0\n[deploy]\nsignal_timeout = 2\nsignal_max_backoff = 0.5\n',
    });
    // The first CFN signal is refused: the retry path logs its target.
    o.fault('cfn-signal', '500');
    const d = startDaemon(root, { args: ['--debug'] });
    t.teardown(async () => {
      if (d.alive()) await killTree(d);
    });
    await until('a refused signal attempt', () => (o.requests['cfn-signal'] ?? 0) >= 1);
    o.fault('cfn-signal', undefined);
    await until('all signals', () => ids.every((id) => o.signals.some((s) => s.deploymentId === id)));
    // A failing poll (logged with its URL), expired tokens, then recovery.
    const pollRoute = transport === 'POLL_SERVER_CFN' ? 'cfn' : transport === 'POLL_SERVER_HEAT' ? 'heat' : 'swift';
    o.fault(pollRoute, '500');
    const before = o.requests[pollRoute] ?? 0;
    await until('two failing polls', () => (o.requests[pollRoute] ?? 0) >= before + 2);
    o.fault(pollRoute, undefined);
    o.expireTokens();
    o.addDeployment({
      name: 'late',
      group: 'script',
      config: script('echo late'),
      inputs: secretInput,
      signal: 'HEAT_SIGNAL',
    });
    await until('the late deployment signalled', () => o.signals.length >= ids.length + 1);
    t.same(await stopDaemon(d), { code: 0, signal: null }, 'SIGTERM exits 0');

    const deployInputs = (
      o.metadata().deployments as Array<{ inputs: Array<{ name: string; value: unknown }> }>
    ).flatMap((x) => x.inputs);
    const signatures = deployInputs
      .filter((i) => i.name === 'deploy_signal_id')
      .flatMap((i) => {
        const u = new URL(String(i.value));
        return [u.searchParams.get('Signature'), u.searchParams.get('temp_url_sig')];
      });
    const requestUrl = (o.agentSection().request as { metadata_url?: string } | undefined)?.metadata_url;
    if (requestUrl) signatures.push(new URL(requestUrl).searchParams.get('temp_url_sig'));
    const secrets = [
      o.creds.cfnSecret,
      o.creds.signalSecret,
      o.creds.password,
      o.creds.swiftKey,
      inputSecret,
      ...signatures,
    ].filter((s): s is string => !!s);
    t.ok(secrets.length >= 7, `${secrets.length} secrets audited`);

    const logText = d.raw.join('\n');
    t.ok(d.lines.length > 50, `${d.lines.length} log lines captured`);
    for (const s of secrets) t.notOk(logText.includes(s), `no log line holds ${s.slice(0, 6)}…`);
    t.notOk(TOKEN.test(logText), 'no log line holds a Keystone token');
    // The audit can fail: the secrets really are on disk, in the files meant to hold them.
    t.ok(
      readFileSync(path.join(root, 'var/run/heat-config/heat-config'), 'utf8').includes(inputSecret),
      'the heat-config file holds the input secret (0600)',
    );

    const leaks: string[] = [];
    let worldReadable = 0;
    for (const file of walkFiles(root)) {
      if (!(lstatSync(file).mode & 0o004)) continue;
      worldReadable++;
      const text = readFileSync(file, 'latin1');
      for (const s of secrets) if (text.includes(s)) leaks.push(`${path.relative(root, file)} holds ${s.slice(0, 6)}…`);
      if (TOKEN.test(text)) leaks.push(`${path.relative(root, file)} holds a token`);
    }
    t.same(leaks, [], `no world-readable file holds a secret (${worldReadable} checked)`);

    const wrong: string[] = [];
    const seen = new Set<string>();
    for (const file of walkFiles(root)) {
      const rel = path.relative(root, file);
      if (TEST_INPUTS.some((p) => p.test(rel))) continue;
      const rule = FILE_MODES.find((r) => r.pattern.test(rel));
      const mode = lstatSync(file).mode & 0o7777;
      if (!rule) wrong.push(`${rel}: undocumented file (mode ${mode.toString(8)})`);
      else {
        seen.add(rule.what);
        if (mode !== rule.mode)
          wrong.push(`${rel}: mode ${mode.toString(8)}, documented ${rule.mode.toString(8)} (${rule.what})`);
      }
    }
    for (const rel of walkDirs(root)) {
      const rule = DIR_MODES.find((r) => r.pattern.test(rel));
      if (!rule) continue;
      seen.add(rule.what);
      const mode = lstatSync(path.join(root, rel)).mode & 0o7777;
      if (mode !== rule.mode)
        wrong.push(`${rel}/: mode ${mode.toString(8)}, documented ${rule.mode.toString(8)} (${rule.what})`);
    }
    t.same(wrong, [], 'every file the agent wrote has its documented mode');
    t.equal(
      readFileSync(path.join(root, 'var/run/os-refresh-config.lock'), 'utf8'),
      '',
      'the world-readable refresh lock is empty',
    );
    for (const what of [
      'config rewritten from Heat metadata',
      'metadata cache',
      'deployed/<id>.json and .notify.json',
      'heat-config deployments file',
      'deployment state records',
      'state directory',
    ]) {
      t.ok(seen.has(what), `checked: ${what}`);
    }
  });
}
