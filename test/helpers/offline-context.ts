import type { CollectContext } from '../../src/collectors/types.js';
import { loadConfig, type CliOverrides } from '../../src/config/load.js';
import type { HttpClient } from '../../src/http/types.js';
import { captureLog } from './log-capture.js';

// A CollectContext for collectors that must never touch the network (local sources): any HTTP use fails the test.
export async function offlineContext(collector: string, root: string, cli: CliOverrides = {}) {
  const loaded = await loadConfig({ root, cli });
  const captured = captureLog();
  const noHttp: HttpClient = {
    request: () => {
      throw new Error(`the ${collector} collector must not use HTTP`);
    },
  };
  const ctx: CollectContext = {
    config: loaded.config,
    paths: loaded.paths,
    log: captured.log,
    http: noHttp,
    signal: new AbortController().signal,
    memory: {},
    now: Date.now,
  };
  return { ctx, captured };
}
