import type { FSWatcher } from 'chokidar';
import { findCollector } from '../collectors/registry.js';
import type { CollectorName } from '../collectors/types.js';
import type { AgentConfig } from '../config/options.js';
import type { Logger } from '../log/logger.js';

// Watches local sources (local directories, heat_local files) so a change starts a cycle at once instead of at the
// next poll. A burst of events within `debounceMs` produces one wake-up.

export interface SourceWatcher {
  close(): Promise<void>;
}

export async function watchSources(
  paths: readonly string[],
  debounceMs: number,
  onChange: () => void,
  log: Logger,
): Promise<SourceWatcher> {
  if (paths.length === 0) return { close: async () => undefined };
  // Loaded on first use: one-shot commands never pay for it.
  const { watch } = await import('chokidar');
  let timer: NodeJS.Timeout | undefined;
  const watcher: FSWatcher = watch([...paths], {
    ignoreInitial: true,
    depth: 0,
    // Polling-free: inotify on Linux.
    usePolling: false,
  });
  const fire = (event: string, file: string) => {
    log.debug({ event, file }, 'local source changed');
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      onChange();
    }, debounceMs);
  };
  watcher.on('all', fire);
  watcher.on('error', (err) => log.warn({ err }, 'watching local sources failed; polling continues'));
  return {
    async close() {
      if (timer) clearTimeout(timer);
      await watcher.close();
    },
  };
}

/** The watch of the configured collectors' local paths, kept while the loop runs and renewed on reload. */
export class CollectorWatch {
  private watcher: SourceWatcher | undefined;

  constructor(
    private readonly onChange: () => void,
    private readonly log: Logger,
  ) {}

  /** Watches what `config`'s collectors name, replacing the previous watch (none when [agent] watch is off). */
  async restart(config: AgentConfig): Promise<void> {
    await this.close();
    if (!config.agent.watch) return;
    const paths = new Set<string>();
    for (const name of config.DEFAULT.collectors) {
      const collector = findCollector(name as CollectorName);
      for (const p of collector?.watchPaths?.(config) ?? []) paths.add(p);
    }
    this.watcher = await watchSources([...paths], config.agent.watch_debounce * 1000, this.onChange, this.log);
  }

  async close(): Promise<void> {
    await this.watcher?.close();
    this.watcher = undefined;
  }
}
