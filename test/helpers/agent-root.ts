import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AgentDeps } from '../../src/daemon/agent-deps.js';
import type { HttpClient } from '../../src/http/types.js';
import type { Logger } from '../../src/log/logger.js';

// Builds a throw-away instance root for agent tests: a config file, local data and heat_local data under one
// directory, so the agent runs with --root and touches nothing else.

export interface AgentRoot {
  root: string;
  configFile: string;
  localDir: string;
  /** Path inside the root where heat_local reads (real path). */
  cfnInitData: string;
  /** Write <localDir>/<name> with mode 0600. */
  writeLocal(name: string, value: unknown): void;
  writeHeatLocal(value: unknown): void;
  writeConfig(text: string): void;
}

export function makeAgentRoot(root: string, config: string): AgentRoot {
  const localDir = path.join(root, 'var/lib/os-collect-config/local-data');
  const configFile = path.join(root, 'etc/os-collect-config.conf');
  const cfnInitData = path.join(root, 'var/lib/heat-cfntools/cfn-init-data');
  mkdirSync(localDir, { recursive: true, mode: 0o700 });
  chmodSync(localDir, 0o700);
  mkdirSync(path.dirname(configFile), { recursive: true });
  mkdirSync(path.dirname(cfnInitData), { recursive: true, mode: 0o700 });
  const writeConfig = (text: string) => writeFileSync(configFile, text, { mode: 0o600 });
  writeConfig(config);
  return {
    root,
    configFile,
    localDir,
    cfnInitData,
    writeLocal(name, value) {
      const file = path.join(localDir, name);
      writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value), { mode: 0o600 });
      chmodSync(file, 0o600);
    },
    writeHeatLocal(value) {
      writeFileSync(cfnInitData, typeof value === 'string' ? value : JSON.stringify(value), { mode: 0o600 });
    },
    writeConfig,
  };
}

/** A shell script that appends one JSON line {OS_CONFIG_FILES, MARK} per run to `record`, then exits `exitFile`'s code. */
export function recordingCommand(dir: string): { command: string; record: string; exitFile: string } {
  const record = path.join(dir, 'runs.jsonl');
  const exitFile = path.join(dir, 'exit-code');
  const script = path.join(dir, 'record.sh');
  writeFileSync(exitFile, '0');
  writeFileSync(
    script,
    `#!/bin/sh\nprintf '{"files":"%s","mark":"%s"}\\n' "$OS_CONFIG_FILES" "\${OCA_TEST_MARK:-}" >> '${record}'\nexit "$(cat '${exitFile}')"\n`,
    { mode: 0o755 },
  );
  return { command: script, record, exitFile };
}

/** An HTTP client for agents whose sources are all local: any request is a test defect. */
export const noHttp: HttpClient = { request: () => Promise.reject(new Error('no HTTP in this test')) };

/**
 * The dependencies of an Agent over `root` for tests: collect mode, the captured log, no HTTP, no random jitter;
 * `base` (per test file) and then `over` (per test) replace any of them.
 */
export function agentDeps(
  root: AgentRoot,
  log: Logger,
  base: Partial<AgentDeps> = {},
): (over?: Partial<AgentDeps>) => AgentDeps {
  return (over = {}) => ({
    sources: { root: root.root },
    log,
    mode: 'collect',
    createHttp: () => noHttp,
    random: () => 0,
    ...base,
    ...over,
  });
}
