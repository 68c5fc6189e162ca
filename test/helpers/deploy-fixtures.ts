import { randomUUID } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, type CliOverrides, type LoadedConfig } from '../../src/config/load.js';
import type { DeployContext } from '../../src/deploy/dispatch.js';
import { createHttpClient } from '../../src/http/client.js';
import type { HttpClient } from '../../src/http/types.js';
import { REPO } from './bundle.js';
import { captureLog, type CapturedLog } from './log-capture.js';

// Building blocks for deployment tests: Heat-shaped deployments, fixture hooks installed into an instance root, and
// a DeployContext wired to a real HTTP client and a capturing logger.

export const FIXTURE_HOOKS = path.join(REPO, 'test/fixtures/hooks');
/** Where the default [deploy] hooks_dir puts hooks, under a root. */
export const HOOKS_DIR = 'var/lib/heat-config/hooks';

/** Copy fixture hooks into <root>/var/lib/heat-config/hooks with explicit modes (git does not keep them all). */
export function installHooks(
  root: string,
  hooks: Record<string, { from?: string; mode?: number }> = { fake: {} },
): string {
  const dir = path.join(root, HOOKS_DIR);
  mkdirSync(dir, { recursive: true });
  for (const [name, spec] of Object.entries(hooks)) {
    const target = path.join(dir, name);
    copyFileSync(path.join(FIXTURE_HOOKS, spec.from ?? name), target);
    chmodSync(target, spec.mode ?? 0o755);
  }
  return dir;
}

export interface Input {
  name: string;
  value?: unknown;
  type?: string;
}

export interface DeploymentSpec {
  id?: string;
  name?: string;
  group?: string;
  config?: unknown;
  action?: string;
  inputs?: Input[];
  /** Signal inputs (from a sink), appended after the deploy_* inputs. */
  signal?: Input[];
  outputs?: Array<{ name: string; error_output?: boolean }>;
  options?: Record<string, unknown>;
}

/** One element of Heat's deployments list, shaped as Heat's format_software_config produces it. */
export function deployment(spec: DeploymentSpec = {}): Record<string, unknown> & { id: string; name: string } {
  const id = spec.id ?? randomUUID();
  const name = spec.name ?? `deployment-${id.slice(0, 8)}`;
  return {
    id,
    name,
    group: spec.group ?? 'fake',
    creation_time: '2026-01-01T00:00:00Z',
    config: spec.config ?? {},
    options: spec.options ?? {},
    inputs: [
      ...(spec.inputs ?? []).map((i) => ({ type: 'String', description: '', ...i })),
      {
        name: 'deploy_server_id',
        description: 'ID of the server being deployed to',
        type: 'String',
        value: 'server-0001',
      },
      {
        name: 'deploy_action',
        description: 'Name of the current action being deployed',
        type: 'String',
        value: spec.action ?? 'CREATE',
      },
      {
        name: 'deploy_stack_id',
        description: 'ID of the stack this deployment belongs to',
        type: 'String',
        value: 'demo/8c2e4f1a-0000-4000-8000-000000000001',
      },
      {
        name: 'deploy_resource_name',
        description: 'Name of this deployment resource in the stack',
        type: 'String',
        value: name,
      },
      ...(spec.signal ?? [{ name: 'deploy_signal_transport', type: 'String', value: 'NO_SIGNAL' }]),
    ],
    outputs: (spec.outputs ?? []).map((o) => ({ type: 'String', description: '', error_output: false, ...o })),
  };
}

export async function deployConfig(root: string, cli: CliOverrides = {}): Promise<LoadedConfig> {
  return loadConfig({ root, configFiles: [], cli: { ...cli, deploy: { signal_timeout: 2, ...(cli.deploy ?? {}) } } });
}

export interface DeployHarness {
  loaded: LoadedConfig;
  captured: CapturedLog;
  http: HttpClient;
  ctx(deployments: readonly unknown[] | undefined, extra?: Partial<DeployContext>): DeployContext;
}

export async function deployHarness(root: string, cli: CliOverrides = {}): Promise<DeployHarness> {
  const loaded = await deployConfig(root, cli);
  const captured = captureLog('debug');
  const http = createHttpClient({ defaultMaxBytes: 1024 * 1024, defaultRetries: 0, retryBaseMs: 5 });
  return {
    loaded,
    captured,
    http,
    ctx: (deployments, extra = {}) => ({
      config: loaded.config,
      paths: loaded.paths,
      log: captured.log,
      http,
      signal: new AbortController().signal,
      deployments,
      killGraceMs: 200,
      ...extra,
    }),
  };
}

/** Lines of a fake hook's counter file: "<id> <action>". */
export function counterLines(text: string | undefined): string[] {
  return (text ?? '').split('\n').filter(Boolean);
}
