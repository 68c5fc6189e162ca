import type { Command } from 'commander';
import { cfnEndpoint, type CfnEndpoint } from '../cfntools/endpoint.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { createLazyHttpClient } from '../http/lazy-client.js';
import type { HttpClient } from '../http/types.js';

// What the heat-cfntools commands share: --root (every path under it) and the agent's configuration, read for what
// heat-cfntools kept elsewhere: [cfn] metadata_url (heat-api-cfn, when Heat's boot data does not name it),
// [cfn] timeout and ca_certificate, and the proxy and size settings of the one HTTP client. A broken configuration
// does not stop a command: its defaults are used.

export interface CfnRuntimeFlags {
  root?: string;
  configFile?: string[];
  configDir?: string[];
}

export interface CfnRuntime {
  readonly loaded: LoadedConfig;
  /** The HTTP client, made on first use. */
  readonly http: () => Promise<HttpClient>;
  /** heat-api-cfn's URL (the command's --url first), looked up when first asked. */
  endpoint(url?: string): () => Promise<CfnEndpoint | undefined>;
}

/** The command's flags, with the global ones given before it (`os-config-agent --root /mnt cfn-init`); its own win. */
export function cfnFlagsOf<F extends CfnRuntimeFlags>(cmd: Command): F {
  const own = cmd.opts<F>();
  const global = cmd.parent?.opts<CfnRuntimeFlags>() ?? {};
  const root = own.root ?? global.root;
  const configFile = [...(global.configFile ?? []), ...(own.configFile ?? [])];
  const configDir = [...(global.configDir ?? []), ...(own.configDir ?? [])];
  return {
    ...own,
    ...(root !== undefined ? { root } : {}),
    ...(configFile.length > 0 ? { configFile } : {}),
    ...(configDir.length > 0 ? { configDir } : {}),
  };
}

export async function cfnRuntime(flags: CfnRuntimeFlags): Promise<CfnRuntime> {
  // The sources as common-flags.ts builds them, without its module: it brings the logger (pino) these commands do not use.
  const loaded = await loadConfig({ root: flags.root, configFiles: flags.configFile, configDirs: flags.configDir });
  const { config } = loaded;
  let client: HttpClient | undefined;
  return {
    loaded,
    http: async () =>
      (client ??= createLazyHttpClient({
        defaultMaxBytes: config.agent.http_max_bytes,
        defaultRetries: 2,
        proxy: { config: config.agent, env: process.env },
      })),
    endpoint: (url) => () => cfnEndpoint({ url, paths: loaded.paths, configured: config.cfn.metadata_url }),
  };
}
